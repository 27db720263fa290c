"""The lilbee supervisor (helm/warden/files/lilbee-supervisor.py), against a real Python and real processes.

Its rules are held to supervisor_cases.json, the table the simulation's Java model of them reads too. The rest runs
the supervisor as a process, as the chart runs it, beside a stand-in for warden's switch socket (this test, speaking
the protocol) and a stand-in for lilbee (a Python process that takes server.lock with flock, as lilbee's filelock
does): what starts it, what stops it, that the gate lock it is given outlives warden's copy, that a restarted warden
gets it back, and that nothing but a peer of warden's UID and clock is believed.

Run: python3 -m unittest discover -s src/test/python -v   (SupervisorPythonTest runs it in the default suite)
"""

import fcntl
import importlib.util
import json
import os
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


def wait_for(what, check, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


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
            rules = supervisor.Rules(config["validity_ms"] * MS, config["grace_ms"] * MS, config["first_pause_ms"] * MS,
                                     config["max_pause_ms"] * MS, config["calm_ms"] * MS,
                                     not_before=config.get("not_before_ms", 0) * MS)
            with self.subTest(case["name"]):
                for at, event, arg, expected in case["steps"]:
                    argument = arg * MS if event in ("start", "go") else arg
                    actions = [":".join(str(part) for part in action) for action in rules.step(at * MS, event, argument)]
                    self.assertEqual(expected, actions, "at %d ms, %s %s" % (at, event, arg))


class FakeWarden:
    """warden's side of the switch socket: listens, greets each supervisor, sends permits, reads reports."""

    def __init__(self, path, clock_offset=0):
        self.path = path
        self.clock_offset = clock_offset
        if os.path.exists(path):
            os.unlink(path)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(4)
        self.conn = None
        self.buffer = b""
        self.gates = []

    def accept(self, timeout=10.0):
        self.listener.settimeout(timeout)
        self.conn, _ = self.listener.accept()
        self.conn.settimeout(0.05)
        self.conn.send(("hello 1 %d\n" % (time.monotonic_ns() + self.clock_offset)).encode())

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
        self.log.close()

    def warden(self, **kwargs):
        warden = FakeWarden(self.socket, **kwargs)
        self.wardens.append(warden)
        return warden

    def supervise(self, *options, ignore_term=False):
        command = [sys.executable, SUPERVISOR, "--socket", self.socket, "--validity", "3", "--grace", "1", *options, "--",
                   sys.executable, "-c", LILBEE, self.server_lock, self.state, "1" if ignore_term else "0"]
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

    def serving(self, validity, ignore_term=False):
        """A supervisor whose warden gave a permit of `validity` seconds and its gate lock: (warden, supervisor, lilbee's pid)."""
        warden = self.warden()
        process = self.supervise(ignore_term=ignore_term)
        warden.accept()
        gate = self.gate()
        warden.start(gate, validity)
        os.close(gate)
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
        gate = self.gate()
        warden.start(gate, 3)
        os.close(gate)
        wait_for("lilbee serving", lambda: self.lilbee_pid(required=False))
        self.assertGreaterEqual(time.monotonic() - launched, 1.5, self.output())

    def test_a_permit_starts_lilbee_holding_the_gate_lock_which_outlives_wardens_copy(self):
        warden, _, pid = self.serving(3)
        report = warden.report(lambda line: line.startswith("lilbee %d " % pid))
        self.assertEqual(int(report.split()[2]), supervisor.start_ticks(pid), "the report names this very instance")
        self.assertTrue(holds_flock(pid, self.server_lock))
        self.assertTrue(holds_flock(pid, self.gate_lock), "lilbee inherits warden's gate lock")
        warden.close()
        self.wardens.remove(warden)
        self.assertFalse(flock_free(self.gate_lock), "warden gone, the gate stays locked while lilbee lives")

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

    def test_a_restarted_warden_gets_the_gate_lock_back(self):
        warden, _, pid = self.serving(3)
        warden.close()
        self.wardens.remove(warden)
        restarted = self.warden()
        restarted.accept()
        restarted.report(lambda line: line.startswith("lilbee %d" % pid))
        wait_for("the gate lock given back", lambda: (restarted.lines(), restarted.gates)[1])
        given = os.fstat(restarted.gates[0])
        self.assertEqual((os.stat(self.gate_lock).st_dev, os.stat(self.gate_lock).st_ino), (given.st_dev, given.st_ino))
        fcntl.flock(restarted.gates[0], fcntl.LOCK_EX | fcntl.LOCK_NB)  # the same open file: already its lock
        restarted.go(3)
        self.assertTrue(os.path.exists("/proc/%d" % pid))

    def test_a_warden_on_another_clock_is_not_believed(self):
        warden = self.warden(clock_offset=-30 * 1_000_000_000)
        self.supervise()
        warden.accept()
        gate = self.gate()
        warden.start(gate, 3)
        time.sleep(1)
        self.assertIsNone(self.lilbee_pid(required=False))
        self.assertIn("monotonic clock", self.output())

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

    def test_sigterm_goes_on_to_lilbee_and_its_code_is_the_supervisors(self):
        warden, process, _ = self.serving(3)
        process.send_signal(signal.SIGTERM)
        self.assertEqual(143, process.wait(10))
        self.assertIn("term", self.lilbee_states())
        self.assertEqual("exiting", warden.report(lambda line: line == "exiting"), "its last word, lilbee gone")

    def test_the_health_port_answers_while_the_loop_turns_and_not_once_it_is_stopped(self):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        process = self.supervise("--health-port", str(port))
        wait_for("the health port", lambda: self.answers(port))
        process.send_signal(signal.SIGSTOP)
        try:
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


if __name__ == "__main__":
    unittest.main()
