"""The lilbee supervisor (helm/warden/files/lilbee-supervisor.py), against a real Python and real processes.

Its rules are held to supervisor_cases.json, the table the simulation's Java model of them reads too. The rest runs
the supervisor as a process, as the chart runs it, beside a stand-in for warden's switch socket (this test, speaking
the protocol) and a stand-in for lilbee (a Python process that takes server.lock with flock, as lilbee's filelock
does): what starts it, what stops it, that the gate lock it is given outlives warden's copy, that a restarted warden
gets it back, and that nothing but a peer of warden's UID and clock is believed.

Run: python3 -m unittest discover -s src/test/python -v   (SupervisorPythonTest runs it in the default suite, in two
shards at once: SUPERVISOR_TEST_SHARD=0/2 and 1/2)
"""

import fcntl
import importlib.util
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
SUPERVISOR = os.path.join(ROOT, "helm", "warden", "files", "lilbee-supervisor.py")
MS = 1_000_000

spec = importlib.util.spec_from_file_location("lilbee_supervisor", SUPERVISOR)
supervisor = importlib.util.module_from_spec(spec)
spec.loader.exec_module(supervisor)

# A stand-in for lilbee serve: takes server.lock as filelock does (flock, exclusive, retried), says so in its state
# file, and on SIGTERM writes "term" there first (exiting, unless told to ignore it).
LILBEE = r"""
import fcntl, os, signal, sys, time
lock, state, ignore_term = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
def term(signum, frame):
    with open(state, "a") as f:
        f.write("term\n")
    if not ignore_term:
        os._exit(143)
signal.signal(signal.SIGTERM, term)
fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
while True:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        break
    except BlockingIOError:
        time.sleep(0.05)
with open(state, "a") as f:
    f.write("serving %d\n" % os.getpid())
while True:
    time.sleep(1)
"""


# Another container's process for foreign_warden: listens at a name of its own, renames it over the switch path, hands the
# listener back, and lives until the test lets go of it.
FOREIGN = r"""
import os, socket, sys
path, fd = sys.argv[1], int(sys.argv[2])
back = socket.socket(fileno=fd)
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
temporary = "%s.%d" % (path, os.getpid())
listener.bind(temporary)
listener.listen(4)
os.rename(temporary, path)
socket.send_fds(back, [b"x"], [listener.fileno()])
back.recv(1)
"""


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def probe(port, source):
    """An HTTP probe of 127.0.0.1:port from address source: its status, or None without an answer."""
    with socket.socket() as conn:
        conn.settimeout(2)
        conn.bind((source, 0))
        conn.connect(("127.0.0.1", port))
        conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        head = conn.recv(64)
    return int(head.split()[1]) if head.startswith(b"HTTP/") else None


def wait_for(what, check, timeout=10.0, why=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what + ("" if why is None else ":\n" + why()))


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(child) for child in f.read().split()]
    except OSError:
        return []


def dead(pid):
    try:
        with open("/proc/%d/stat" % pid) as stat:
            return stat.read().split(") ")[1][0] == "Z"
    except OSError:
        return True


def has_open(pid, path):
    """Whether process pid has a descriptor of path's file (the file itself, whatever name it has now)."""
    st = os.stat(path)
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            other = os.stat("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
            return True
    return False


def flock_free(path):
    """Whether an exclusive flock on path can be taken now (taken and let go at once)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def state(pid, task):
    """A thread's state letter (its /proc stat's third field): "T" once it is stopped."""
    with open("/proc/%d/task/%s/stat" % (pid, task)) as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


def own_flock(fd):
    """Whether an exclusive flock was taken through this process's descriptor fd's open file (its fdinfo)."""
    with open("/proc/self/fdinfo/%d" % fd) as info:
        return any(line.startswith("lock:") and " FLOCK " in line and " WRITE " in line for line in info)


def holds_flock(pid, path):
    """Whether process pid holds an exclusive flock on path's file through one of its descriptors (its fdinfo)."""
    st = os.stat(path)
    dev = "%02x:%02x:%d" % (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    for fd in os.listdir("/proc/%d/fdinfo" % pid):
        try:
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as info:
                for line in info:
                    fields = line.split()
                    if line.startswith("lock:") and "FLOCK" in fields and "WRITE" in fields and dev in fields:
                        return True
        except OSError:
            pass
    return False


class RulesTable(unittest.TestCase):
    """supervisor_cases.json against the supervisor's own Rules."""

    def test_every_case(self):
        with open(os.path.join(HERE, "supervisor_cases.json")) as f:
            table = json.load(f)
        self.assertGreater(len(table["cases"]), 10)
        for case in table["cases"]:
            config = dict(table["config"], **case.get("config", {}))
            rules = supervisor.Rules(config["permit_ms"] * MS, config["grace_ms"] * MS, config["first_pause_ms"] * MS,
                                     config["max_pause_ms"] * MS, config["calm_ms"] * MS,
                                     not_before=config.get("not_before_ms", 0) * MS, prepares=config["prepare"],
                                     spare=config["spare"], prepare_after=config["prepare_after_ms"] * MS)
            with self.subTest(case["name"]):
                for at, event, arg, expected in case["steps"]:
                    argument = arg * MS if event in ("start", "go") else arg
                    actions = [":".join(str(part) for part in action) for action in rules.step(at * MS, event, argument)]
                    self.assertEqual(expected, actions, "at %d ms, %s %s" % (at, event, arg))


class Identity(unittest.TestCase):
    """WardenIdentity on processes this test starts: which pids may speak for warden."""

    def test_a_thread_or_a_pid_gone_is_not_warden_and_a_live_peer_is_told_by_its_pidfd(self):
        identity = supervisor.WardenIdentity(os.getuid(), same_container=True)
        # Not this test's child (that would be "a process the supervisor started"): setsid -f leaves it to init.
        script = ("import os, threading, time; t = threading.Thread(target=time.sleep, args=(30,)); t.start();"
                  " print(os.getpid(), t.native_id, flush=True); t.join()")
        with subprocess.Popen(["setsid", "-f", sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) as starter:
            pid, thread = (int(word) for word in starter.stdout.readline().split())
        pidfd = os.pidfd_open(pid)
        try:
            self.assertIn("gone", identity.refusal(thread, os.getuid()), "a thread's id names no process")
            self.assertIsNone(identity.refusal(pid, os.getuid(), pidfd), "outside a pod, any live process of its UID")
            os.kill(pid, signal.SIGKILL)
            wait_for("it exited", lambda: supervisor.exited(pidfd))
            self.assertIsNotNone(identity.refusal(pid, os.getuid(), pidfd), "its pidfd says it is gone")
        finally:
            if not supervisor.exited(pidfd):
                os.kill(pid, signal.SIGKILL)
            os.close(pidfd)


class Usage(unittest.TestCase):
    """Its options, as a user meets them: each on the command line, one name each, mistakes exit 2 and say the fix."""

    def run_supervisor(self, *args):
        return subprocess.run([sys.executable, SUPERVISOR, *args], capture_output=True, text=True, timeout=30)

    def test_help_names_each_option_once(self):
        shown = self.run_supervisor("--help")
        self.assertEqual(0, shown.returncode, shown.stderr)
        self.assertIn("--permit PERMIT", shown.stdout)
        self.assertNotIn("--validity", shown.stdout, "the permit's old name is taken, not taught")

    def test_no_command_says_where_it_goes(self):
        refused = self.run_supervisor("--permit", "5")
        self.assertEqual(2, refused.returncode)
        self.assertIn("give lilbee's command after --, e.g. -- lilbee serve --port 8080", refused.stderr)

    def test_the_old_name_of_the_permit_is_the_permit(self):
        for name in ("--permit", "--validity"):
            refused = self.run_supervisor(name, "0", "--", "lilbee")
            self.assertEqual(2, refused.returncode, name)
            self.assertIn("--permit and --grace must be positive", refused.stderr, name)

    def test_the_environment_sets_nothing(self):
        env = dict(os.environ, WARDEN_SWITCH_PERMIT="0", WARDEN_SWITCH_GRACE="0")
        shown = subprocess.run([sys.executable, SUPERVISOR, "--help"], capture_output=True, text=True, timeout=30, env=env)
        self.assertIn("(default 5.0)", shown.stdout)


class FakeWarden:
    """warden's side of the switch socket: listens (or is handed a listener), answers each hello of the supervisor's,
    sends permits, reads reports. clock_offset is added to the clock its hellos say (stale_hellos of them only, when
    given)."""

    def __init__(self, path, clock_offset=0, stale_hellos=None, listener=None):
        self.path = path
        self.clock_offset = clock_offset
        self.stale_hellos = stale_hellos
        if listener is None:
            if os.path.exists(path):
                os.unlink(path)
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(path)
            listener.listen(4)
        self.listener = listener
        self.conn = None
        self.buffer = b""
        self.gates = []
        self.hellos = 0

    def accept(self, timeout=10.0):
        """The supervisor connected and greeted: its hello answered."""
        self.listener.settimeout(timeout)
        self.conn, _ = self.listener.accept()
        self.conn.settimeout(0.05)
        deadline = time.monotonic() + timeout
        while self.hellos == 0 and time.monotonic() < deadline:
            self.lines()
        if self.hellos == 0:
            raise AssertionError("the supervisor connected and said no hello")

    def hello(self):
        stale = self.stale_hellos is None or self.hellos < self.stale_hellos
        self.hellos += 1
        self.conn.send(("hello 1 %d\n" % (time.monotonic_ns() + (self.clock_offset if stale else 0))).encode())

    def start(self, gate_fd, seconds):
        socket.send_fds(self.conn, [("start %d\n" % (time.monotonic_ns() + int(seconds * 1e9))).encode()], [gate_fd])

    def go(self, seconds):
        self.conn.send(("go %d\n" % (time.monotonic_ns() + int(seconds * 1e9))).encode())

    def stop(self, seq=1):
        self.conn.send(b"stop %d warden says no\n" % seq)

    def lines(self):
        try:
            data, fds, _, _ = socket.recv_fds(self.conn, 4096, 4)
        except (socket.timeout, BlockingIOError):
            return []
        self.gates.extend(fds)
        self.buffer += data
        found = []
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            found.append(line.decode())
            if line.startswith(b"hello "):
                self.hello()
        return found

    def report(self, predicate, timeout=10.0):
        """The first report line of the supervisor's that predicate accepts."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.lines():
                if predicate(line):
                    return line
        raise AssertionError("no such report from the supervisor")

    def close(self):
        if self.conn:
            self.conn.close()
        self.listener.close()
        for fd in self.gates:
            os.close(fd)


class Pod(unittest.TestCase):
    """A supervisor process run as the chart runs it, with a stand-in lilbee."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="supervisor-")
        self.socket = os.path.join(self.dir, "switch.sock")
        self.server_lock = os.path.join(self.dir, "server.lock")
        self.gate_lock = os.path.join(self.dir, "warden-gate.lock")
        self.state = os.path.join(self.dir, "lilbee-state")
        self.processes = []
        self.wardens = []
        self.holders = []
        self.log = open(os.path.join(self.dir, "supervisor.log"), "w+")

    def tearDown(self):
        # Every process started here, by pid: each supervisor and the lilbee it started (a session of its own, which
        # the supervisor's SIGKILL would leave behind).
        for process in self.processes:
            for target in children(process.pid) + [process.pid]:
                try:
                    os.kill(target, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            process.wait()
        for warden in self.wardens:
            warden.close()
        for holder in self.holders:
            holder.close()
        self.log.close()

    def warden(self, **kwargs):
        warden = FakeWarden(self.socket, **kwargs)
        self.wardens.append(warden)
        return warden

    def supervise(self, *options, ignore_term=False, same_container=True):
        """The supervisor, believing a warden in this container (the fake warden is this test) unless told otherwise."""
        trust = ["--same-container-warden"] if same_container else []
        command = [sys.executable, SUPERVISOR, "--socket", self.socket, "--permit", "3", "--grace", "1", *trust, *options,
                   "--", sys.executable, "-c", LILBEE, self.server_lock, self.state, "1" if ignore_term else "0"]
        process = subprocess.Popen(command, stdout=self.log, stderr=self.log)
        self.processes.append(process)
        return process

    def output(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def lilbee_states(self):
        try:
            with open(self.state) as f:
                return f.read().split("\n")
        except FileNotFoundError:
            return []

    def lilbee_pid(self, required=True):
        for line in self.lilbee_states():
            if line.startswith("serving "):
                return int(line.split()[1])
        if required:
            raise AssertionError("lilbee is not serving:\n" + self.output())
        return None

    def gate(self):
        """warden's gate lock: the gate file opened and locked, as warden holds it."""
        fd = os.open(self.gate_lock, os.O_RDWR | os.O_CREAT, 0o666)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd

    def permit(self, warden, seconds):
        """warden's permit of `seconds`, with its gate lock (this test's copy closed once sent: lilbee's is what holds it)."""
        gate = self.gate()
        warden.start(gate, seconds)
        os.close(gate)

    def serving(self, seconds, ignore_term=False):
        """A supervisor whose warden gave a permit of `seconds` seconds and its gate lock: (warden, supervisor, lilbee's pid)."""
        warden = self.warden()
        process = self.supervise(ignore_term=ignore_term)
        warden.accept()
        self.permit(warden, seconds)
        return warden, process, wait_for("lilbee serving", lambda: self.lilbee_pid(required=False))

    def test_nothing_starts_without_a_permit(self):
        warden = self.warden()
        self.supervise()
        warden.accept()
        self.assertEqual("lilbee none", warden.report(lambda line: line.startswith("lilbee")))
        warden.go(3)
        time.sleep(0.5)
        self.assertEqual([], [s for s in self.lilbee_states() if s], "a go is no permit to start")

    def test_no_lilbee_before_start_after_even_on_a_permit_at_once(self):
        # The kubelet's liveness probe watches from --start-after (its initialDelaySeconds): no lilbee runs unwatched.
        warden = self.warden()
        launched = time.monotonic()
        self.supervise("--start-after", "1.5")
        warden.accept()
        self.permit(warden, 3)
        wait_for("lilbee serving", lambda: self.lilbee_pid(required=False))
        self.assertGreaterEqual(time.monotonic() - launched, 1.5, self.output())

    def test_the_supervisor_keeps_the_gate_lock_while_lilbee_lives_and_lilbee_dies_with_the_supervisor(self):
        warden, process, pid = self.serving(3)
        report = warden.report(lambda line: line.startswith("lilbee %d " % pid))
        self.assertEqual(int(report.split()[2]), supervisor.start_ticks(pid), "the report names this very instance")
        gate = os.stat(self.gate_lock)
        self.assertEqual("gate %d %d" % (gate.st_dev, gate.st_ino), warden.report(lambda line: line.startswith("gate ")))
        self.assertTrue(holds_flock(pid, self.server_lock))
        self.assertFalse(has_open(pid, self.gate_lock), "lilbee, which any process of its UID can take descriptors from,"
                         " is given none of the gate lock")
        warden.close()
        self.wardens.remove(warden)
        self.assertFalse(flock_free(self.gate_lock), "warden gone, the gate stays locked while lilbee lives")
        os.kill(process.pid, signal.SIGKILL)
        wait_for("lilbee killed with its supervisor", lambda: dead(pid))
        wait_for("the gate free once both are gone", lambda: flock_free(self.gate_lock) and flock_free(self.server_lock))

    def test_a_permit_that_runs_out_stops_lilbee_and_frees_the_gate(self):
        warden, _, _ = self.serving(1.5)
        wait_for("SIGTERM when the permit ends", lambda: "term" in self.lilbee_states(), timeout=5)
        wait_for("the gate free once lilbee is gone", lambda: flock_free(self.gate_lock) and flock_free(self.server_lock))
        self.assertEqual("lilbee none", warden.report(lambda line: line == "lilbee none"))

    def test_renewals_keep_lilbee_and_a_stop_ends_it_with_sigkill_after_the_grace(self):
        warden, _, pid = self.serving(3, ignore_term=True)
        for _ in range(5):
            time.sleep(1)
            warden.go(3)
        self.assertEqual([], [s for s in self.lilbee_states() if s == "term"], "renewed in time, lilbee keeps running")
        stopped = time.monotonic()
        warden.stop()
        wait_for("SIGTERM on a stop", lambda: "term" in self.lilbee_states())
        wait_for("lilbee killed", lambda: dead(pid))
        self.assertGreaterEqual(time.monotonic() - stopped, 0.9, "SIGKILL only after the grace")
        wait_for("the gate free", lambda: flock_free(self.gate_lock))
        self.assertEqual("stopped 1", warden.report(lambda line: line.startswith("stopped")), "the stop answered, once done")

    def test_reports_come_on_a_change_and_once_a_second_not_every_turn(self):
        # A supervisor that said everything every turn would fill a slow warden's socket and lose its stop's answer.
        warden, _, pid = self.serving(3)
        warden.report(lambda line: line.startswith("lilbee %d " % pid))
        heard = []
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline:
            heard += warden.lines()
        self.assertLessEqual(len([line for line in heard if line.startswith("lilbee ")]), 4, heard)

    def test_a_restarted_warden_is_given_back_the_gate_lock_and_its_renewals_keep_lilbee(self):
        # The gate lock never goes to lilbee; a warden the supervisor believes gets back the open file that holds it,
        # with its first report, and the warden that gave it is never given it back.
        warden, _, pid = self.serving(3)
        warden.report(lambda line: line.startswith("lilbee %d" % pid))
        self.assertEqual([], warden.gates, "not given back to the warden that gave it")
        warden.close()
        self.wardens.remove(warden)
        restarted = self.warden()
        restarted.accept()
        restarted.report(lambda line: line.startswith("lilbee %d" % pid))
        for _ in range(4):
            restarted.go(3)
            time.sleep(1)
            restarted.lines()
        self.assertEqual(1, len(restarted.gates), "the gate lock given back once")
        gate = os.stat(self.gate_lock)
        given = os.fstat(restarted.gates[0])
        self.assertEqual((gate.st_dev, gate.st_ino), (given.st_dev, given.st_ino))
        self.assertTrue(own_flock(restarted.gates[0]), "the very open file that holds the gate's lock")
        self.assertFalse(dead(pid), "renewed by the restarted warden past its first permit")
        self.assertEqual("gate %d %d" % (gate.st_dev, gate.st_ino), restarted.report(lambda line: line.startswith("gate ")),
                         "told which gate file the supervisor holds the lock of")
        self.assertFalse(flock_free(self.gate_lock))

    def test_a_warden_not_believed_is_given_back_nothing_and_told_nothing(self):
        warden, _, pid = self.serving(3)
        warden.report(lambda line: line.startswith("lilbee %d" % pid))
        warden.close()
        self.wardens.remove(warden)
        stranger = self.warden(clock_offset=-30 * 1_000_000_000)
        stranger.accept()
        heard = []
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            heard += stranger.lines()
        self.assertEqual([], stranger.gates, "the gate lock goes back only to a warden believed")
        self.assertEqual([], [line for line in heard if not line.startswith("hello ")], "nothing reported before")

    def test_a_stop_is_obeyed_however_it_is_numbered(self):
        warden, _, pid = self.serving(30)
        warden.conn.send(b"stop x warden says no\n")
        wait_for("lilbee stopped on a stop whose number does not parse", lambda: dead(pid))

    def test_a_warden_on_another_clock_is_never_believed_however_often_it_answers(self):
        warden = self.warden(clock_offset=-30 * 1_000_000_000)
        self.supervise()
        warden.accept()
        gate = self.gate()
        warden.start(gate, 3)
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            warden.lines()
        self.assertIsNone(self.lilbee_pid(required=False))
        self.assertIn("monotonic clock", self.output())
        self.assertGreaterEqual(warden.hellos, 2, "a stale hello is asked again, not trusted or distrusted for good")

    def test_a_hello_read_late_is_asked_again_and_the_fresh_one_believed(self):
        # A loaded node can hold a read back past the clock's bound once: the next hello is believed.
        warden = self.warden(clock_offset=-3 * 1_000_000_000, stale_hellos=1)
        self.supervise()
        warden.accept()
        wait_for("a second hello", lambda: warden.lines() is not None and warden.hellos >= 2)
        self.permit(warden, 3)
        wait_for("lilbee serving", lambda: self.lilbee_pid(required=False))

    def test_a_warden_in_this_very_container_is_not_believed(self):
        # Every process of lilbee's container runs as warden's UID and could put a socket of its own at the path.
        warden = self.warden()
        self.supervise(same_container=False)
        time.sleep(1)
        warden.listener.settimeout(0.2)
        try:
            warden.conn, _ = warden.listener.accept()
            warden.conn.settimeout(0.05)
            gate = self.gate()
            warden.start(gate, 3)
            os.close(gate)
        except OSError:
            pass  # not connected, or let go at once
        time.sleep(1)
        self.assertIsNone(self.lilbee_pid(required=False))
        self.assertIn("runs in this container", self.output())
        self.assertEqual([], warden.gates)

    @unittest.skipUnless(os.geteuid() == 0, "serving the socket as another UID needs root")
    def test_a_socket_served_by_another_uid_is_not_believed(self):
        os.chmod(self.dir, 0o777)
        reader, writer = os.pipe()
        child = os.fork()
        if child == 0:
            os.close(reader)
            try:
                os.setgid(65534)
                os.setuid(65534)
                impostor = FakeWarden(self.socket)
                os.write(writer, b"x")
                impostor.accept()
                gate = os.open(self.gate_lock, os.O_RDWR | os.O_CREAT, 0o666)
                impostor.start(gate, 3)
                time.sleep(3)
            finally:
                os._exit(0)
        os.close(writer)
        os.read(reader, 1)
        self.supervise()
        time.sleep(1.5)
        self.assertIsNone(self.lilbee_pid(required=False))
        self.assertIn("not believed", self.output())
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)

    def foreign_warden(self, **kwargs):
        """A fake warden whose socket a process of another container (another mount namespace: unshare, as root) made to
        listen and renamed over the path, then handed to this test: the supervisor sees that process behind it."""
        ours, theirs = socket.socketpair()
        process = subprocess.Popen(["unshare", "--mount", "--propagation", "private", sys.executable, "-c", FOREIGN,
                                    self.socket, str(theirs.fileno())], pass_fds=(theirs.fileno(),))
        theirs.close()
        self.processes.append(process)
        _, fds, _, _ = socket.recv_fds(ours, 1, 1)
        warden = FakeWarden(self.socket, listener=socket.socket(fileno=fds[0]), **kwargs)
        self.wardens.append(warden)
        self.holders.append(ours)
        return warden, process

    @unittest.skipUnless(os.geteuid() == 0, "a process in another mount namespace needs root (unshare)")
    def test_a_warden_of_another_container_is_believed_and_no_other_while_it_lives(self):
        warden, first = self.foreign_warden()
        self.supervise(same_container=False)
        warden.accept()
        self.permit(warden, 3)
        pid = wait_for("lilbee serving", lambda: self.lilbee_pid(required=False))
        # Another container's socket renamed over warden's, and the supervisor's connection lost: it finds that one at
        # the path and does not believe it while the warden it believed still runs.
        impostor, second = self.foreign_warden()
        warden.conn.close()
        warden.conn = None
        wait_for("the impostor refused", lambda: "pid %d, which is not warden (warden is pid %d, which still runs)"
                 % (second.pid, first.pid) in self.output())
        wait_for("lilbee stopped once its permit ran out", lambda: dead(pid), timeout=8, why=self.output)

    def test_a_socket_at_the_path_that_never_accepts_does_not_hold_the_supervisor(self):
        # Its backlog full, a connect would wait for it, and the permit's end with it.
        warden, _, pid = self.serving(3)
        squatter = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        squatter.bind(self.socket + ".squat")
        squatter.listen(0)
        queued = []
        for _ in range(8):
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.setblocking(False)
            try:
                conn.connect(self.socket + ".squat")
            except BlockingIOError:
                conn.close()
                break
            queued.append(conn)
        os.rename(self.socket + ".squat", self.socket)
        warden.conn.close()
        warden.conn = None
        try:
            wait_for("lilbee stopped once its permit ran out", lambda: dead(pid), timeout=8, why=self.output)
        finally:
            for conn in queued + [squatter]:
                conn.close()

    def test_sigterm_asks_warden_to_step_down_goes_on_to_lilbee_and_its_code_is_the_supervisors(self):
        warden, process, _ = self.serving(3)
        process.send_signal(signal.SIGTERM)
        process.send_signal(signal.SIGTERM)
        self.assertEqual(143, process.wait(10))
        self.assertIn("term", self.lilbee_states())
        said = []
        warden.report(lambda line: said.append(line) or line == "exiting")
        self.assertEqual("exiting", said[-1], "its last word, lilbee gone")
        self.assertEqual(1, said.count("step-down"), "warden asked to step down, once, before: %s" % said)

    def test_a_sigterm_repeated_while_it_exits_leaves_its_code_lilbees(self):
        # A second SIGTERM (a user's, or a runtime's repeat) may come after lilbee has gone, while the interpreter ends.
        warden, process, _ = self.serving(3)
        process.send_signal(signal.SIGTERM)
        warden.report(lambda line: line == "exiting")
        while process.poll() is None:
            try:
                os.kill(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                break
            time.sleep(0.0005)
        self.assertEqual(143, process.wait(10))

    def test_a_health_port_taken_in_either_family_ends_the_supervisor_before_any_lilbee(self):
        # A squatter on one family would answer the kubelet's probes for a supervisor that no longer turns.
        for family, address, name in ((socket.AF_INET6, "::", "IPv6"), (socket.AF_INET, "0.0.0.0", "IPv4")):
            with self.subTest(name), socket.socket(family) as squatter:
                if family == socket.AF_INET6:
                    squatter.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                squatter.bind((address, 0))
                squatter.listen(1)
                warden = self.warden()
                process = self.supervise("--health-port", str(squatter.getsockname()[1]))
                self.assertEqual(1, process.wait(10), self.output())
                self.assertIn("is taken on " + name, self.output())
                self.assertIsNone(warden.listener.settimeout(0.2) or self.connected(warden), "it never reached warden")
                self.assertIsNone(self.lilbee_pid(required=False))

    @staticmethod
    def connected(warden):
        try:
            return warden.listener.accept()
        except socket.timeout:
            return None

    def test_a_flood_from_the_pod_leaves_room_for_the_kubelet_and_a_stalled_loop_is_told(self):
        class Loop:
            turned_at = time.monotonic_ns()
        loop = Loop()
        port = free_port()
        # 127.0.0.2 plays the node, whence the kubelet probes; every other address here is the pod's.
        health = supervisor.Health(port, loop, local=lambda address: address != "127.0.0.2")
        health.start()
        try:
            flood = [socket.create_connection(("127.0.0.1", port)) for _ in range(supervisor.HEALTH_PER_PEER + 2)]
            for conn in flood[supervisor.HEALTH_PER_PEER:]:
                conn.settimeout(1)
                self.assertEqual(b"", conn.recv(64), "past its share, the pod's connection is closed unanswered")
            self.assertEqual(200, probe(port, source="127.0.0.2"), "the node finds room")
            flood[0].settimeout(2)
            self.assertEqual(b"", flood[0].recv(64), "an idle connection is closed after a second")
            loop.turned_at -= 2 * supervisor.SECOND
            self.assertEqual(503, probe(port, source="127.0.0.2"), "a loop that stopped turning fails the probe")
            for conn in flood:
                conn.close()
        finally:
            health.close()

    @unittest.skipUnless(os.geteuid() == 0 and os.path.exists("/usr/bin/python3"), "running it as another UID needs root")
    def test_the_supervisor_is_undumpable_so_no_process_of_its_uid_takes_its_descriptors(self):
        process = subprocess.Popen(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "/usr/bin/python3",
                                    SUPERVISOR, "--socket", self.socket, "--", "true"], stdout=self.log, stderr=self.log)
        self.processes.append(process)
        wait_for("the supervisor waiting for warden", lambda: "waiting for warden" in self.output())
        self.assertEqual(0, os.stat("/proc/%d/fd" % process.pid).st_uid, "an undumpable process's /proc is root's")
        self.assertEqual(65534, os.stat("/proc/%d" % process.pid).st_uid)

    def test_the_health_port_answers_while_the_loop_turns_and_not_once_it_is_stopped(self):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        process = self.supervise("--health-port", str(port))
        wait_for("the health port", lambda: self.answers(port))
        process.send_signal(signal.SIGSTOP)
        try:
            # The signal is delivered a moment later: a probe sent before then is answered by a running process.
            wait_for("the supervisor stopped", lambda: all(state(process.pid, task) == "T"
                                                           for task in os.listdir("/proc/%d/task" % process.pid)))
            self.assertFalse(self.answers(port), "a stopped supervisor must fail its liveness probe")
        finally:
            process.send_signal(signal.SIGCONT)
        wait_for("answering again", lambda: self.answers(port))

    @staticmethod
    def answers(port):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=1) as answer:
                return answer.status == 200
        except OSError:
            return False

    def test_without_lilbees_command_it_says_how_to_give_it(self):
        result = subprocess.run([sys.executable, SUPERVISOR, "--socket", self.socket], capture_output=True, text=True)
        self.assertEqual(2, result.returncode)
        self.assertIn("give lilbee's command after --", result.stderr)


# Marks, in the file named by $WARMED_LOG, each process that imported it: what --prepare loads before a permit.
WARMED = r"""
import os, time
time.sleep(float(os.environ.get("WARMED_SLEEP", "0")))
with open(os.environ["WARMED_LOG"], "a") as log:
    log.write("imported %d\n" % os.getpid())
"""


def stopped(pid):
    """Whether every thread of process pid is stopped (state T in its stat)."""
    states = []
    for task in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/stat" % (pid, task), "rb") as stat:
            states.append(stat.read(4096).rsplit(b")", 1)[1].split()[0])
    return all(state == b"T" for state in states)


def locks_of(pid):
    """The lock lines of every descriptor of process pid (its fdinfo): empty when it holds no lock at all."""
    found = []
    for fd in os.listdir("/proc/%d/fdinfo" % pid):
        try:
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as info:
                found += [line for line in info if line.startswith("lock:")]
        except OSError:
            pass
    return found


def listens(pid):
    """Whether process pid has a listening TCP socket: its socket inodes against the kernel's table of listeners."""
    inodes = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    for table in ("/proc/%d/net/tcp" % pid, "/proc/%d/net/tcp6" % pid):
        with open(table) as f:
            for row in f.readlines()[1:]:
                fields = row.split()
                if fields[3] == "0A" and fields[9] in inodes:
                    return True
    return False


class Warm(Pod):
    """--prepare: lilbee waits in a prepared process, its modules loaded, holding nothing, and runs there on a permit.
    Every test of Pod runs here too, warm: what the switch guarantees stays true."""

    def setUp(self):
        super().setUp()
        self.modules = os.path.join(self.dir, "modules")
        os.mkdir(self.modules)
        with open(os.path.join(self.modules, "warmed.py"), "w") as f:
            f.write(WARMED)
        with open(os.path.join(self.modules, "standin_lilbee.py"), "w") as f:
            f.write(LILBEE)
        # lilbee as pip installs it: a console script whose first line names its Python.
        self.script = os.path.join(self.dir, "lilbee")
        with open(self.script, "w") as f:
            f.write("#!%s\n%s" % (sys.executable, LILBEE))
        os.chmod(self.script, 0o755)
        self.imports = os.path.join(self.dir, "imports")
        os.environ["WARMED_LOG"] = self.imports
        os.environ["PYTHONPATH"] = self.modules
        self.addCleanup(os.environ.pop, "WARMED_LOG")
        self.addCleanup(os.environ.pop, "PYTHONPATH")

    def supervise(self, *options, ignore_term=False, same_container=True, lilbee=()):
        trust = ["--same-container-warden"] if same_container else []
        command = [sys.executable, SUPERVISOR, "--socket", self.socket, "--permit", "3", "--grace", "1", *trust,
                   "--prepare", "warmed", *options, "--", *(lilbee or [self.script]), self.server_lock, self.state,
                   "1" if ignore_term else "0"]
        process = subprocess.Popen(command, stdout=self.log, stderr=self.log)
        self.processes.append(process)
        return process

    def importers(self):
        try:
            with open(self.imports) as f:
                return [int(line.split()[1]) for line in f if line.startswith("imported ")]
        except FileNotFoundError:
            return []

    def warm_pid(self, warden, other_than=None):
        line = warden.report(lambda line: line.startswith("warm ") and line not in ("warm none", "warm %s" % other_than))
        return int(line.split()[1])

    def serving_warm(self, seconds, *options, **kwargs):
        """A supervisor whose lilbee runs in the process it prepared, on warden's permit of `seconds` seconds:
        (warden, lilbee's pid). The permit waits for the prepared process: one not ready yet leaves lilbee to start cold."""
        warden = self.warden()
        self.supervise(*options, **kwargs)
        warden.accept()
        prepared = self.warm_pid(warden)
        self.permit(warden, seconds)
        self.assertEqual(prepared, wait_for("lilbee serving", lambda: self.lilbee_pid(required=False)))
        return warden, prepared

    def serving(self, seconds, ignore_term=False):
        """Pod's, with the permit given once the prepared process is ready: given before, it would have to outlast the
        prepared Python's own start too (its interpreter, the supervisor's imports, then lilbee's), which a busy machine
        does not always finish within a permit of seconds that this fake warden never renews."""
        warden, prepared = self.serving_warm(seconds, ignore_term=ignore_term)
        return warden, self.processes[-1], prepared

    def assert_holds_nothing(self, pid):
        self.assertIn(pid, self.importers(), "the prepared process loaded the modules named")
        self.assertEqual([], locks_of(pid), "a prepared lilbee holds no lock")
        self.assertFalse(listens(pid), "a prepared lilbee serves nothing")
        self.assertEqual([], [s for s in self.lilbee_states() if s], "lilbee's own code has not run")
        self.assertTrue(flock_free(self.gate_lock) if os.path.exists(self.gate_lock) else True)

    def test_a_prepared_lilbee_holds_nothing_until_a_permit_and_then_runs_in_that_process(self):
        warden = self.warden()
        self.supervise()
        warden.accept()
        prepared = self.warm_pid(warden)
        time.sleep(0.5)
        self.assert_holds_nothing(prepared)
        warden.go(3)
        time.sleep(0.3)
        self.assertEqual([], [s for s in self.lilbee_states() if s], "a go is no permit to start, warm or not")
        self.permit(warden, 3)
        pid = wait_for("lilbee serving", lambda: self.lilbee_pid(required=False))
        self.assertEqual(prepared, pid, "lilbee runs in the prepared process:\n" + self.output())
        self.assertEqual([prepared], self.importers(), "and imported nothing again")
        warden.report(lambda line: line.startswith("lilbee %d " % pid))
        self.assertFalse(has_open(pid, self.gate_lock), "the gate lock stays with its supervisor")
        self.assertTrue(holds_flock(pid, self.server_lock))

    def test_once_lilbee_is_stopped_another_prepared_lilbee_waits_and_serves_the_next_permit(self):
        warden = self.warden()
        self.supervise()
        warden.accept()
        first = self.warm_pid(warden)
        self.permit(warden, 3)
        wait_for("lilbee serving", lambda: self.lilbee_pid(required=False) == first)
        warden.stop()
        wait_for("lilbee stopped", lambda: dead(first))
        second = self.warm_pid(warden, other_than=first)
        self.assertNotEqual(first, second)
        time.sleep(0.3)
        os.remove(self.state)
        self.assert_holds_nothing(second)
        self.permit(warden, 3)
        self.assertEqual(second, wait_for("lilbee serving again", lambda: self.lilbee_pid(required=False)))

    def test_a_lilbee_told_to_go_while_it_imports_is_reported_before_its_own_code_runs(self):
        # lilbee's imports take seconds: after a crash the next permit comes while the new prepared process imports.
        # warden takes a server.lock held by a process not reported as its pod's lilbee for a stranger's.
        os.environ["WARMED_SLEEP"] = "1.5"
        self.addCleanup(os.environ.pop, "WARMED_SLEEP")
        warden, _, first = self.serving(5)
        os.kill(first, signal.SIGKILL)
        wait_for("the crash seen", lambda: "lilbee exited" in self.output())
        self.permit(warden, 5)
        report = warden.report(lambda line: line.startswith("lilbee ") and line != "lilbee none"
                               and line.split()[1] != str(first))
        second = int(report.split()[1])
        self.assertEqual([s for s in self.lilbee_states() if s.startswith("serving")], ["serving %d" % first],
                         "its imports were not done yet")
        self.assertEqual(second, wait_for("lilbee serving again", lambda: [int(s.split()[1]) for s in self.lilbee_states()
                                                                          if s.startswith("serving")][1:], timeout=15)[0])
        self.assertIn(second, self.importers(), "started in a prepared process")
        self.assertTrue(holds_flock(second, self.server_lock))

    def serving_pids(self):
        return [int(s.split()[1]) for s in self.lilbee_states() if s.startswith("serving")]

    def test_with_a_spare_a_lilbee_that_crashes_starts_again_in_a_process_prepared_while_it_ran(self):
        warden = self.warden()
        self.supervise("--spare", "--prepare-after", "0.5")
        warden.accept()
        first = self.warm_pid(warden)
        self.permit(warden, 5)
        self.assertEqual([first], wait_for("lilbee serving", self.serving_pids))
        spare = self.warm_pid(warden, other_than=first)
        time.sleep(0.3)
        self.assertIn(spare, self.importers(), "the spare loaded the modules named")
        self.assertEqual([], locks_of(spare), "a spare holds no lock")
        self.assertFalse(listens(spare), "a spare serves nothing")
        self.assertEqual([first], self.serving_pids(), "lilbee's own code has not run in the spare")
        os.kill(first, signal.SIGKILL)
        warden.report(lambda line: line == "lilbee none")
        self.permit(warden, 5)
        self.assertEqual([first, spare], wait_for("lilbee serving again", lambda: self.serving_pids()[1:] and self.serving_pids()))
        self.assertIn("starting lilbee in its prepared process (pid %d)" % spare, self.output())
        self.assertTrue(holds_flock(spare, self.server_lock))

    def test_no_process_is_prepared_within_prepare_after_of_a_lilbees_exit(self):
        warden, first = self.serving_warm(5, "--prepare-after", "1.5")
        os.kill(first, signal.SIGKILL)
        warden.report(lambda line: line == "lilbee none")
        exited = time.monotonic()
        self.warm_pid(warden, other_than=first)
        self.assertGreaterEqual(time.monotonic() - exited, 1.2, "prepared within --prepare-after of lilbee's exit")

    def test_without_a_spare_nothing_is_prepared_while_lilbee_runs(self):
        warden, first = self.serving_warm(5)
        heard = []
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            heard += warden.lines()
        self.assertEqual({"warm none"}, {line for line in heard if line.startswith("warm ")}, self.output())
        self.assertEqual([first], self.importers(), "the one prepared process, lilbee now")

    def test_a_prepared_lilbee_that_has_not_taken_its_go_is_not_reported_as_lilbee(self):
        warden = self.warden()
        self.supervise()
        warden.accept()
        prepared = self.warm_pid(warden)
        os.kill(prepared, signal.SIGSTOP)
        try:
            # kill() returns before the stop: a thread of it woken by the go could still take it meanwhile.
            wait_for("the prepared process stopped", lambda: stopped(prepared))
            self.permit(warden, 5)
            heard = []
            deadline = time.monotonic() + 1
            while time.monotonic() < deadline:
                heard += warden.lines()
            self.assertNotIn("lilbee %d" % prepared, " ".join(heard), "not lilbee before it has taken its go")
            self.assertIn("lilbee none", heard)
        finally:
            os.kill(prepared, signal.SIGCONT)
        warden.report(lambda line: line.startswith("lilbee %d " % prepared))

    def prepared_process(self):
        """A prepared process as the supervisor starts one, this test holding the other end of its socket pair."""
        ours, theirs = socket.socketpair()
        process = subprocess.Popen([sys.executable, SUPERVISOR, "--prepared", "%d:%d" % (theirs.fileno(), os.getpid()),
                                    "--prepare", "warmed",
                                    "--", self.script, self.server_lock, self.state, "0"],
                                   pass_fds=(theirs.fileno(),), stdout=self.log, stderr=self.log, start_new_session=True)
        self.processes.append(process)
        theirs.close()
        ours.settimeout(10)
        self.assertTrue(ours.recv(MS).startswith(b"ready "))
        return process, ours

    def test_told_to_go_a_prepared_lilbee_says_so_and_runs_lilbee_only_once_told_to_run(self):
        # The supervisor says "run" only once it has reported the process to warden as lilbee: no server.lock before.
        process, control = self.prepared_process()
        control.send(b"go\n")
        self.assertEqual(b"going\n", control.recv(64))
        time.sleep(0.5)
        self.assertEqual([], [s for s in self.lilbee_states() if s], "lilbee's command has not run before its run")
        control.send(b"run\n")
        self.assertEqual(process.pid, wait_for("lilbee serving", lambda: self.lilbee_pid(required=False)))
        self.assertTrue(holds_flock(process.pid, self.server_lock))

    def test_a_prepared_lilbee_whose_supervisor_goes_between_go_and_run_exits(self):
        process, control = self.prepared_process()
        control.send(b"go\n")
        self.assertEqual(b"going\n", control.recv(64))
        control.close()
        self.assertEqual(0, process.wait(10))
        self.assertEqual([], [s for s in self.lilbee_states() if s])

    def test_python_dash_m_runs_warm_too(self):
        self.serving_warm(3, lilbee=(sys.executable, "-m", "standin_lilbee"))

    def test_a_prepared_lilbee_killed_before_its_permit_leaves_lilbee_to_start_cold(self):
        warden = self.warden()
        self.supervise()
        warden.accept()
        prepared = self.warm_pid(warden)
        os.kill(prepared, signal.SIGKILL)
        wait_for("the supervisor noticing", lambda: "ended before its permit" in self.output())
        self.permit(warden, 3)
        pid = wait_for("lilbee serving", lambda: self.lilbee_pid(required=False))
        self.assertNotEqual(prepared, pid)
        self.assertIn("starting lilbee", self.output(), "started cold")

    def test_a_command_that_is_not_a_python_script_starts_cold_and_says_why(self):
        warden = self.warden()
        self.supervise(lilbee=(sys.executable, "-c", LILBEE))
        warden.accept()
        self.permit(warden, 3)
        wait_for("lilbee serving", lambda: self.lilbee_pid(required=False))
        self.assertIn("lilbee starts cold: %s is not a Python script" % shutil.which(sys.executable), self.output())
        self.assertEqual([], self.importers())

    def test_the_prepared_lilbee_goes_with_its_supervisor(self):
        warden = self.warden()
        process = self.supervise()
        warden.accept()
        prepared = self.warm_pid(warden)
        process.send_signal(signal.SIGTERM)
        self.assertEqual(0, process.wait(10), "no lilbee ran: 0")
        wait_for("the prepared lilbee gone", lambda: dead(prepared))

    def test_a_prepared_lilbee_whose_supervisor_is_killed_exits_on_its_own(self):
        warden = self.warden()
        process = self.supervise()
        warden.accept()
        prepared = self.warm_pid(warden)
        process.kill()
        wait_for("the prepared lilbee gone", lambda: dead(prepared))
        self.assertEqual([], [s for s in self.lilbee_states() if s], "and lilbee's own code never ran")


def load_tests(loader, tests, pattern):
    """With SUPERVISOR_TEST_SHARD=i/n, every n-th test from the i-th (in order): n runs at once take every test once.
    The tests wait on real processes more than they compute, so SupervisorPythonTest runs two shards side by side."""
    shard = os.environ.get("SUPERVISOR_TEST_SHARD")
    if not shard:
        return tests
    index, count = (int(part) for part in shard.split("/"))

    def flat(suite):
        for test in suite:
            if isinstance(test, unittest.TestSuite):
                yield from flat(test)
            else:
                yield test

    return unittest.TestSuite(test for n, test in enumerate(flat(tests)) if n % count == index)


if __name__ == "__main__":
    unittest.main()
