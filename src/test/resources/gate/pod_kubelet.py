"""A test kubelet for one pod: run as PID 1 of the pod's own PID namespace (unshare --pid --fork --mount-proc
--kill-child), inside the pod's own network namespace, so the pod's processes see each other and nothing else, as with
shareProcessNamespace: true, and listen on the pod's own ports.

It runs the pod as the chart's manifests say: the sidecar (warden) first; the main container once warden's startup
probe answers 200 (asked once a probe period; never again, as Kubernetes reads a startup probe once). In gate mode the
main container is lilbee's supervisor running `lilbee serve`, exactly the chart's command. A container that exits is
restarted after the kubelet's back-off (10 s doubling to 5 minutes, reset after 10 minutes of running). Liveness probes
as the chart's: warden's /q/health/live every 10 s, three failures restart it (SIGTERM, SIGKILL after 5 s); the
supervisor's health port every second, two failures restart lilbee's container (SIGTERM, SIGKILL after 1 s). Without
a sidecar the main container starts at once: a bare `lilbee serve` replica.

Each container runs in a mount namespace of its own, as a runtime runs it (lilbee's supervisor tells warden's container
from its own by that), and a container's "read_only" directories are bind-mounted read-only in it, as the chart mounts
the switch's emptyDir in lilbee's container.

Every container start and exit, and every probe that restarts one, goes to the events file as one JSON line:
{"t": epoch seconds, "container": "warden"|"lilbee", "event": "start"|"exit"|"liveness", "pid": n, "rc": n}.
pids are the pod's own (its namespace's). SIGTERM ends the pod: each container gets SIGTERM, then SIGKILL after the
grace period; every process of the pod dies with this PID 1.
"""

import ctypes
import json
import os
import signal
import sys
import time
import urllib.error
import urllib.request

config = json.load(open(sys.argv[1]))
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNS = 0x00020000
MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18


def checked(result, what):
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, "%s: %s" % (what, os.strerror(code)))


def own_mounts(read_only):
    """In a forked child: a mount namespace of its own, nothing of it shared back, and read_only bind-mounted read-only."""
    checked(libc.unshare(CLONE_NEWNS), "unshare")
    checked(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    for path in read_only:
        target = path.encode()
        checked(libc.mount(target, target, None, MS_BIND, None), "mount --bind " + path)
        checked(libc.mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY, None), "mount -o remount,ro " + path)
events = open(config["events"], "a", buffering=1)
BACKOFF = config.get("backoff", 10.0)
BACKOFF_MAX = config.get("backoff_max", 300.0)
BACKOFF_RESET = config.get("backoff_reset", 600.0)
PROBE_PERIOD = config.get("probe_period", 1.0)
GRACE = config.get("grace", 30.0)


def event(container, name, **fields):
    events.write(json.dumps(dict(t=time.time(), container=container, event=name, **fields)) + "\n")


def answers(url, timeout):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            return answer.status
    except urllib.error.HTTPError as e:
        return e.code
    except (urllib.error.URLError, OSError):
        return -1


class Container:
    def __init__(self, name, spec):
        self.name = name
        self.argv = spec["argv"]
        self.env = dict(spec.get("env", {}))
        self.env["WARDEN_TEST_CONTAINER"] = "%s-%s" % (config["name"], name)
        self.log = spec["log"]
        self.read_only = spec.get("read_only", [])
        self.liveness = spec.get("liveness")
        self.pid = None
        self.started_at = None
        self.delay = 0.0
        self.restart_at = None
        self.failures = 0
        self.next_probe = 0.0
        self.kill_at = None

    def start(self):
        log = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        pid = os.fork()
        if pid == 0:
            os.dup2(log, 1)
            os.dup2(log, 2)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            try:
                own_mounts(self.read_only)
                os.execvpe(self.argv[0], self.argv, self.env)
            except OSError as e:
                print("pod_kubelet: cannot start %s: %s" % (self.name, e), file=sys.stderr, flush=True)
                os._exit(127)
        os.close(log)
        self.pid = pid
        self.started_at = time.monotonic()
        self.restart_at = None
        self.failures = 0
        self.kill_at = None
        self.next_probe = time.monotonic() + (self.liveness or {}).get("initial", 0)
        event(self.name, "start", pid=pid)

    def exited(self, status):
        rc = os.waitstatus_to_exitcode(status)
        ran = time.monotonic() - self.started_at
        event(self.name, "exit", pid=self.pid, rc=rc)
        self.pid = None
        self.kill_at = None
        # The kubelet's CrashLoopBackOff: 10 s, doubling, at most 5 minutes; forgotten after 10 quiet minutes.
        self.delay = BACKOFF if ran >= BACKOFF_RESET or self.delay == 0 else min(self.delay * 2, BACKOFF_MAX)
        self.restart_at = time.monotonic() + self.delay

    def probe(self, now):
        """The liveness probe, once a period: a container failing it enough times in a row gets SIGTERM, then SIGKILL."""
        if self.pid is None or self.liveness is None or now < self.next_probe:
            return
        if self.kill_at is not None:
            if now >= self.kill_at:
                self.kill_all(signal.SIGKILL)
            return
        self.next_probe = now + self.liveness["period"]
        status = answers(self.liveness["url"], self.liveness["timeout"])
        self.failures = self.failures + 1 if status < 200 or status >= 400 else 0
        if self.failures >= self.liveness["failures"]:
            event(self.name, "liveness", pid=self.pid)
            os.kill(self.pid, signal.SIGTERM)
            self.kill_at = now + self.liveness["grace"]

    def kill_all(self, signum):
        """Every process of the container (a cgroup's, to a real runtime): here, those carrying its marker."""
        marker = ("WARDEN_TEST_CONTAINER=%s-%s\0" % (config["name"], self.name)).encode()
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != os.getpid():
                try:
                    with open("/proc/%s/environ" % entry, "rb") as environ:
                        if marker in environ.read() + b"\0":
                            os.kill(int(entry), signum)
                except OSError:
                    pass


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
                # The runtime kills what else the container runs once its main process is gone.
                c.kill_all(signal.SIGKILL)
                c.exited(status)
    now = time.monotonic()
    if not gate_open and now >= next_probe:
        next_probe = now + PROBE_PERIOD
        if answers(config["started_url"], 1) == 200:
            gate_open = True
            event("warden", "started")
    for c in containers:
        c.probe(now)
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
    c.kill_all(signal.SIGKILL)
