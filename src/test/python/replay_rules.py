"""Replays event traces through the supervisor's own Rules, for SupervisorDifferentialTest: traces as JSON on stdin
(each a config of the shared table's keys and steps of [nanoseconds, event, argument]), the actions of each step as
JSON on stdout."""

import importlib.util
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SUPERVISOR = os.path.join(HERE, "..", "..", "..", "helm", "warden", "files", "lilbee-supervisor.py")

spec = importlib.util.spec_from_file_location("lilbee_supervisor", SUPERVISOR)
supervisor = importlib.util.module_from_spec(spec)
spec.loader.exec_module(supervisor)

MS = 1_000_000


def replay(trace):
    c = trace["config"]
    rules = supervisor.Rules(c["permit_ms"] * MS, c["grace_ms"] * MS, c["first_pause_ms"] * MS, c["max_pause_ms"] * MS,
                             c["calm_ms"] * MS, not_before=c["not_before_ms"] * MS, prepares=c["prepare"],
                             spare=c["spare"], prepare_after=c["prepare_after_ms"] * MS)
    return [[":".join(str(part) for part in action) for action in rules.step(at, event, arg)]
            for at, event, arg in trace["steps"]]


json.dump([replay(trace) for trace in json.load(sys.stdin)], sys.stdout)
