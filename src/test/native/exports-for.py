#!/usr/bin/env python3
"""Keeps the --add-exports lines of ALL_EXPORTS whose source and targets are modules a boot layer resolved (one module
name a line in MODULES): exports of modules it does not resolve only produce "Unknown module" warnings.
usage: exports-for.py ALL_EXPORTS MODULES OUT"""
import sys

exports, modules, out = sys.argv[1:]
resolved = set(open(modules).read().split())
with open(out, 'w') as f:
    for line in open(exports):
        source, _, targets = line.strip()[len('--add-exports='):].partition('=')
        kept = [m for m in targets.split(',') if m in resolved]
        if source.split('/')[0] in resolved and kept:
            f.write('--add-exports=%s=%s\n' % (source, ','.join(kept)))
