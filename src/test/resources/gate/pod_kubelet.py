"""A test kubelet for one pod: run as PID 1 of the pod's own PID namespace
(unshare --pid --fork --mount-proc --kill-child), so the pod's processes see each other and
nothing else, as with shareProcessNamespace: true.

It starts the sidecar (warden) when one is given, asks its startup probe once a probe period
until it answers 200, then starts the main container (the real `lilbee serve`) and never asks
again, as Kubernetes reads a startup probe once. A container that exits is restarted after the
kubelet's back-off (10 s doubling to 5 minutes, reset after 10 minutes of running). Without a
sidecar the main container starts at once: a bare `lilbee serve` replica.

Every start and exit goes to the events file as one JSON line, for the test to read:
{"t": epoch seconds, "container": "warden"|"lilbee", "event": "start"|"exit", "pid": n, "rc": n}.
pids are the pod's own (its namespace's). SIGTERM ends the pod: each container gets SIGTERM, then
SIGKILL after the grace period.
"""

import json
import os
import signal
import sys
import time
import urllib.error
import urllib.request

config = json.load(open(sys.argv[1]))
events = open(config["events"], "a", buffering=1)
BACKOFF = config.get("backoff", 10.0)
BACKOFF_MAX = config.get("backoff_max", 300.0)
BACKOFF_RESET = config.get("backoff_reset", 600.0)
PROBE_PERIOD = config.get("probe_period", 1.0)
GRACE = config.get("grace", 30.0)


def event(container, name, **fields):
    events.write(json.dumps(dict(t=time.time(), container=container, event=name, **fields)) + "\n")


class Container:
    def __init__(self, name, spec):
        self.name = name
        self.argv = spec["argv"]
        self.env = dict(spec.get("env", {}))
        self.log = spec["log"]
        self.pid = None
        self.started_at = None
        self.delay = 0.0
        self.restart_at = None

    def start(self):
        log = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        pid = os.fork()
        if pid == 0:
            os.dup2(log, 1)
            os.dup2(log, 2)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.execvpe(self.argv[0], self.argv, self.env)
        os.close(log)
        self.pid = pid
        self.started_at = time.monotonic()
        self.restart_at = None
        event(self.name, "start", pid=pid)

    def exited(self, status):
        rc = os.waitstatus_to_exitcode(status)
        ran = time.monotonic() - self.started_at
        event(self.name, "exit", pid=self.pid, rc=rc)
        self.pid = None
        # The kubelet's CrashLoopBackOff: 10 s, doubling, at most 5 minutes; forgotten after 10 quiet minutes.
        self.delay = BACKOFF if ran >= BACKOFF_RESET or self.delay == 0 else min(self.delay * 2, BACKOFF_MAX)
        self.restart_at = time.monotonic() + self.delay


def started(url):
    try:
        with urllib.request.urlopen(url, timeout=1) as answer:
            return answer.status == 200
    except (urllib.error.URLError, OSError):
        return False


sidecar = Container("warden", config["warden"]) if "warden" in config else None
main = Container("lilbee", config["lilbee"])
containers = [c for c in (sidecar, main) if c]
stopping = False


def stop(signum, frame):
    global stopping
    stopping = True


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)

gate_open = sidecar is None
next_probe = 0.0
if sidecar:
    sidecar.start()
while not stopping:
    # PID 1 reaps every orphan of the pod, not only its own children.
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        for c in containers:
            if c.pid == pid:
                c.exited(status)
    now = time.monotonic()
    if not gate_open and now >= next_probe:
        next_probe = now + PROBE_PERIOD
        if started(config["started_url"]):
            gate_open = True
            event("warden", "started")
    for c in containers:
        if c.pid is None and (c is sidecar or gate_open):
            if c.restart_at is None and c.started_at is None or c.restart_at is not None and now >= c.restart_at:
                c.start()
    time.sleep(0.05)

for c in containers:
    if c.pid:
        os.kill(c.pid, signal.SIGTERM)
deadline = time.monotonic() + GRACE
while any(c.pid for c in containers) and time.monotonic() < deadline:
    try:
        pid, status = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        break
    for c in containers:
        if c.pid == pid:
            c.exited(status)
    time.sleep(0.05)
for c in containers:
    if c.pid:
        os.kill(c.pid, signal.SIGKILL)
