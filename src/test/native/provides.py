#!/usr/bin/env python3
"""The `provides` clauses of a module-info, from the META-INF/providers files GraalVM's annotation processors wrote
into CLASSES (one file an implementation, naming the services it provides).
usage: provides.py CLASSES"""
import collections
import os
import sys

providers = os.path.join(sys.argv[1], 'META-INF', 'providers')
services = collections.defaultdict(list)
for implementation in sorted(os.listdir(providers)) if os.path.isdir(providers) else []:
    for service in open(os.path.join(providers, implementation)).read().split():
        services[service].append(implementation)
print(' '.join('provides %s with %s;' % (s, ', '.join(i)) for s, i in services.items()))
