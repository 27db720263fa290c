#!/usr/bin/env python3
"""lilbee's supervisor in warden's gate mode: a dead-man switch around `lilbee serve`.

    python3 lilbee-supervisor.py [options] -- lilbee serve --port 8080

It runs lilbee only while this pod's warden says it may, and stops it the moment that is no longer so:

- warden says so over a Unix socket (--socket) that only warden's and lilbee's containers mount (lilbee's read-only).
  Whatever is at that path is not believed for being there: the process listening must be warden by what no process
  of this container can forge (SO_PEERCRED: warden's UID, another container's mount namespace, and while the warden
  believed before lives, that one), and only after a hello that reads this container's monotonic clock. No TCP
  port, which any process of the pod could bind while warden is down, has a say.
- A permit to start comes with warden's gate lock itself (its open file, passed with SCM_RIGHTS). This supervisor
  holds it for as long as the lilbee started on it lives, and that lilbee dies with this supervisor (the kernel's
  PR_SET_PDEATHSIG: SIGKILL as it exits, however it dies), so the gate stays locked while lilbee lives: no other pod
  is elected before it is gone, whatever happens to warden. The descriptor never goes to lilbee, whose process
  (dumpable, so that warden can prove its locks) any process of its UID could take it from and unlock it; it goes
  back only to the warden this supervisor believes (a restarted warden holds the gate again through it), with the
  first report it sends that warden; and this process is undumpable, so no process of its UID takes it here either.
- Every permit ends at a moment on the kernel's monotonic clock, which warden's and lilbee's containers
  share; warden renews it while lilbee may run. When it ends, or warden withdraws it, lilbee's process group
  gets SIGTERM, and SIGKILL after --grace. A supervisor that cannot reach warden lets the permit run out.
- lilbee is started again only on a new permit: a lilbee that exits waits for warden, never for an old one.
  As the kubelet restarts a container, an exit of lilbee's own is started again at once the first time, then after
  a pause that doubles (1 s to 30 s; none again after a run of 10 s); a lilbee the supervisor stopped starts again on
  the next permit at once.
- No lilbee runs before --start-after seconds from the supervisor's own start: the kubelet's liveness probe on
  --health-port (initialDelaySeconds, the same number) watches it from then, so it is never killed for being slow
  to start on a loaded node, and never has a lilbee before the probe that would stop a stalled one is watching.
- SIGTERM and SIGINT go on to lilbee, whose exit code this exits with; the first also asks warden to step down
  ("step-down"): its pod is going away, and the gate goes to a standby as lilbee stops, not after.
- What it runs, the permit and the gate lock it holds go to the warden it believes (nothing before) on every change
  and once a second; a stop warden numbered is answered ("stopped N") once no lilbee runs and no permit is held, to
  the warden that said it, and its exit (SIGTERM, with the pod) is told ("exiting") once lilbee is gone: a warden
  letting its Lease go waits for either.
- --health-port answers the kubelet's liveness probe, 200 while the loop turns: it restarts a supervisor that has
  stopped turning (SIGSTOP), which could no longer stop lilbee. IPv4 and IPv6 are bound each on its own, and a port
  taken in either ends the supervisor (the kubelet restarts it) rather than leave a squatter to answer for it.
- With --prepare, lilbee waits warm: while no lilbee runs, a prepared process (lilbee's own Python, in a session of
  its own) imports lilbee's command and the modules named, then waits on a socket pair only this supervisor holds,
  holding no lock and serving nothing. A permit's start tells it to go, and lilbee's command runs in that process,
  its imports already done; with none ready, lilbee starts cold as without --prepare. It is told nothing else, and
  dies with the supervisor. With --spare, one is prepared while lilbee runs too: a lilbee that
  crashes starts again warm. None is started within --prepare-after of a lilbee's start or exit in this pod, which
  have the CPU first: its own start, or after a switchover the new lilbee's start in the pod that took over.

The rules are the class Rules, held to src/test/python/supervisor_cases.json, the table warden's simulation
holds its model of them to as well. Standard library only: any lilbee image has python3.
"""

import argparse
import errno
import importlib
import os
import pkgutil
import re
import runpy
import shlex
import shutil
import select
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

PROTOCOL = 1
SECOND = 1_000_000_000
# A line of warden's is a few dozen bytes: more is not warden.
MAX_LINE = 512
# The most a warden's clock (CLOCK_MONOTONIC, sent with its hello) may be behind ours on arrival: the same
# kernel's clock read twice a socket apart. More means another clock (a time namespace): no permit is believed.
CLOCK_SKEW = SECOND
REPORT_EVERY = SECOND
RECONNECT_EVERY = SECOND // 5
TICK = SECOND // 10
# A hello of ours not answered believably (late, or not at all) is asked again this soon: a loaded node can hold a read
# back past CLOCK_SKEW once, and that says nothing of the next.
HELLO_AGAIN = SECOND // 2
# The health port answers 200 only while the loop has turned this recently: a loop that stops turning cannot stop lilbee.
TURNED_WITHIN = SECOND
# At most this many connections to the health port at a time from one peer (every process of the pod is one), and
# this many in all: the kubelet probes from the node, so a flood from the pod never keeps its probe waiting.
HEALTH_PER_PEER = 4
HEALTH_CONNECTIONS = 512
# What this supervisor has said and warden has not read yet: its report is a few hundred bytes, so this much unread
# means warden is not reading, and the connection is let go.
MAX_OUTBOX = 16384
# SO_PEERPIDFD (Linux 6.5): a pidfd of the process behind a Unix socket, which says whether that very process lives.
SO_PEERPIDFD = getattr(socket, "SO_PEERPIDFD", 77)
# /proc/<pid>/mountinfo of a container is a few dozen lines; its root mount comes first.
MOUNTINFO_BYTES = 256 * 1024
# A process's ancestry is a handful of levels in a pod: a longer walk is a loop.
ANCESTRY = 64
# A prepared process that ended before its go (an import that kills it, a neighbour's signal) is replaced no sooner.
PREPARE_AGAIN_AFTER = 30 * SECOND
# A prepared process says it took its go at once (a thread of its own waits for it): one silent this long has failed.
GOING_WITHIN = 10 * SECOND
# pip's form for an interpreter path too long for a #! line (#!/bin/sh, then this line).
PIP_LONG_SHEBANG = re.compile(rb"^'''exec' (?:\"([^\"]+)\"|(\S+)) \"\$0\" \"\$@\"")


def log(message):
    print("lilbee-supervisor: " + message, file=sys.stderr, flush=True)


class Rules:
    """When lilbee runs, as a pure function of the events and the time (nanoseconds, monotonic).

    step() applies one event, then the timers at that moment, and returns what to do:
    ("start",), ("term",), ("kill",), ("signal", signum), ("release",) (close the gate lock) or ("exit", code); and,
    last, ("warm",) whenever a prepared process is wanted (--prepare): none while terminating, none within
    prepare_after of a lilbee's start or exit (a lilbee starting, here or in the pod that took over, has the CPU
    first), and none while lilbee runs but a spare (--spare).
    """

    # calm: a lilbee that ran this long before it crashed was not crash-looping (one that cannot start fails in its
    # first seconds), and starts again at once.
    def __init__(self, permit, grace, first_pause=SECOND, max_pause=30 * SECOND, calm=10 * SECOND, not_before=0,
                 prepares=False, spare=False, prepare_after=0, prepare_from=0):
        self.permit = permit
        self.grace = grace
        self.first_pause = first_pause
        self.max_pause = max_pause
        self.calm = calm
        self.lilbee = "none"  # none | running | stopping
        self.permit_until = 0
        self.has_gate = False
        self.started_at = 0
        self.stopping_since = 0
        self.killed = False
        self.next_start = not_before
        self.pause = 0
        self.terminating = None
        self.prepares = prepares
        self.spare = spare
        self.prepare_after = prepare_after
        self.prepare_from = prepare_from

    def accepts_gate(self):
        """Whether a start permit's gate lock is kept: only while no lilbee runs and none is being stopped."""
        return self.lilbee == "none" and self.terminating is None

    def step(self, now, event, arg=None):
        actions = self._event(now, event, arg)
        if ("start",) in actions:
            self.prepare_from = now + self.prepare_after
        if self.prepares and self.terminating is None and now >= self.prepare_from and (
                self.lilbee == "none" or self.spare):
            actions.append(("warm",))
        return actions

    def _event(self, now, event, arg):
        actions = []
        if event == "start":
            if self.accepts_gate():
                # The newest permit's gate lock is kept (the supervisor closes one it held before).
                self.has_gate = True
                self.permit_until = min(arg, now + self.permit)
            elif self.lilbee == "running":
                self.permit_until = min(arg, now + self.permit)
        elif event == "go":
            # Extends a running lilbee only: a go never starts one, and never takes back a stop under way.
            if self.lilbee == "running":
                self.permit_until = min(arg, now + self.permit)
        elif event == "stop":
            self.permit_until = 0
        elif event == "exited":
            # Only an exit of lilbee's own (a crash) is paused after: one this supervisor caused is no reason to wait.
            crashed = self.lilbee == "running"
            self.lilbee = "none"
            self.prepare_from = now + self.prepare_after
            self.permit_until = 0
            if self.has_gate:
                self.has_gate = False
                actions.append(("release",))
            if now - self.started_at >= self.calm:
                self.pause = 0
            if crashed:
                # As the kubelet restarts a container: the first crash after a calm run at once, then a pause
                # that doubles, so a crash loop cannot spin.
                self.next_start = now + self.pause
                self.pause = min(max(self.pause * 2, self.first_pause), self.max_pause)
            else:
                self.next_start = now
            if self.terminating is not None:
                actions.append(("exit", arg))
                return actions
        elif event == "signal":
            self.terminating = arg
            if self.lilbee == "none":
                if self.has_gate:
                    self.has_gate = False
                    actions.append(("release",))
                actions.append(("exit", 0))
                return actions
            actions.append(("signal", arg))
        elif event != "tick":
            raise ValueError("unknown event " + repr(event))
        return actions + self._timers(now)

    def _timers(self, now):
        if self.lilbee == "running" and now >= self.permit_until:
            self.lilbee = "stopping"
            self.stopping_since = now
            self.killed = False
            return [("term",)]
        if self.lilbee == "stopping" and not self.killed and now >= self.stopping_since + self.grace:
            self.killed = True
            return [("kill",)]
        if self.lilbee == "none" and self.has_gate:
            if now >= self.permit_until:
                self.has_gate = False
                return [("release",)]
            if now >= self.next_start and self.terminating is None:
                self.lilbee = "running"
                self.started_at = now
                return [("start",)]
        return []

    def wake_at(self, now):
        """The next moment a timer may fire, for the loop's sleep."""
        moments = []
        if self.lilbee == "running":
            moments.append(self.permit_until)
        elif self.lilbee == "stopping" and not self.killed:
            moments.append(self.stopping_since + self.grace)
        elif self.has_gate:
            moments.append(min(self.permit_until, max(self.next_start, now)))
        return min(moments) if moments else now + SECOND


class WardenIdentity:
    """Which process may speak for warden. Anything at the switch path is not warden for being there: every process of
    lilbee's container (lilbee, its engines, its crawler, every Python dependency) runs as warden's UID, and one that
    can write the socket's directory can rename a socket of its own over warden's. So the process listening there must
    be of warden's UID, neither this supervisor nor one of its own, and of another container than this one (another
    mount namespace, which no process of a restricted pod can leave); and once one has been believed, while it lives, no
    other (a restarted warden is a new process, the old one gone). Outside a pod, where warden and lilbee are no
    containers, --same-container-warden lifts the container's rule, and any process of this machine's mount namespace
    and warden's UID could then speak for warden."""

    def __init__(self, uid, same_container=False):
        self.uid = uid
        self.same_container = same_container
        self.own_root = root_mount(os.getpid())
        self.believed = None

    def refusal(self, pid, uid, pidfd=None):
        """Why the process behind a socket at the switch path is not warden; None when it may be. With the peer's
        pidfd (where the kernel has one), it must still live once everything here was read of it: a pid reused
        meanwhile would lend a stranger warden's identity."""
        if uid != self.uid:
            return "it runs as UID %d, not warden's %d" % (uid, self.uid)
        if pid <= 0:
            return "it is not in this pod's PID namespace"
        if thread_group(pid) != pid:
            return "it is gone (its pid names no process now)"
        why = self.refusal_of_process(pid)
        if why is None and pidfd is not None and exited(pidfd):
            return "it exited as it was looked at"
        return why

    def refusal_of_process(self, pid):
        if pid == os.getpid() or descends_from(pid, os.getpid()):
            return "it is this supervisor, or a process it started"
        ticks = start_ticks(pid)
        if self.believed is not None and self.believed != (pid, ticks) and start_ticks(self.believed[0]) == self.believed[1]:
            return "warden is pid %d, which still runs" % self.believed[0]
        if not self.same_container:
            if self.own_root is None:
                return ("this supervisor's own mount namespace cannot be read, so no process can be told apart from"
                        " this container's")
            root = root_mount(pid)
            if root is None or ticks == 0 or start_ticks(pid) != ticks:
                return "its mount namespace cannot be read"
            if root == self.own_root:
                return ("it runs in this container (the same mount namespace), as lilbee and every process started here"
                        " do; warden runs in a container of its own")
        return None

    def believe(self, pid):
        self.believed = (pid, start_ticks(pid))


def root_mount(pid):
    """The mount ID of a process's root mount (mountinfo's first line for "/"): one per mount namespace, so a process of
    this container shares ours and warden's container has its own. None when it cannot be read."""
    try:
        with open("/proc/%d/mountinfo" % pid, "rb") as mountinfo:
            for line in mountinfo.read(MOUNTINFO_BYTES).split(b"\n"):
                fields = line.split()
                if len(fields) > 4 and fields[4] == b"/":
                    return fields[0]
    except OSError:
        pass
    return None


def thread_group(pid):
    """The Tgid of /proc/<pid>/status: pid itself for a process, another for a thread (whose pid /proc resolves too)."""
    try:
        with open("/proc/%d/status" % pid, "rb") as status:
            for line in status.read(4096).split(b"\n"):
                if line.startswith(b"Tgid:"):
                    return int(line.split()[1])
    except (OSError, IndexError, ValueError):
        pass
    return 0


def peer_pidfd(sock):
    """A pidfd of the process behind a connected Unix socket; None where the kernel has none (before Linux 6.5)."""
    try:
        return struct.unpack("i", sock.getsockopt(socket.SOL_SOCKET, SO_PEERPIDFD, 4))[0]
    except OSError:
        return None


def exited(pidfd):
    """Whether the process of a pidfd has exited (it polls readable then)."""
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return bool(poller.poll(0))


def stat_field(pid, field):
    """Field `field` of /proc/<pid>/stat (counted from 1, as proc(5) does: comm is 2); 0 when it cannot be read."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as stat:
            return int(stat.read(4096).rsplit(b")", 1)[1].split()[field - 3])
    except (OSError, IndexError, ValueError):
        return 0


def parent_of(pid):
    """The parent's pid; 0 when gone (or its parent is outside this PID namespace)."""
    return stat_field(pid, 4)


def descends_from(pid, ancestor):
    for _ in range(ANCESTRY):
        pid = parent_of(pid)
        if pid <= 1:
            return False
        if pid == ancestor:
            return True
    return False


class Warden:
    """The connection to warden's switch socket, reconnected while it is gone: believed only when the process listening
    is warden (WardenIdentity), and only after a hello of its that reads this container's monotonic clock."""

    def __init__(self, path, identity):
        self.path = path
        self.identity = identity
        self.sock = None
        self.pid = None
        self.buffer = b""
        self.outbox = b""
        # Whether the gate lock's descriptor went back to this connection's warden (once a connection).
        self.gate_given = False
        self.fds = []
        self.trusted = False
        self.hello_at = 0
        self.next_try = 0
        self.complained = None

    def connect(self, now):
        if self.sock is not None or now < self.next_try:
            return False
        self.next_try = now + RECONNECT_EVERY
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # Never waits: a listener that does not accept (its backlog full) would hold this loop, and every permit's end
        # with it. A Unix socket's connect is done or refused (EAGAIN) at once.
        sock.setblocking(False)
        try:
            sock.connect(self.path)
            pid, uid, gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
            pidfd = peer_pidfd(sock)
            try:
                why = self.identity.refusal(pid, uid, pidfd)
            finally:
                if pidfd is not None:
                    os.close(pidfd)
            if why is not None:
                self.complain(("refused", pid), "%s is served by pid %d, which is not warden (%s): not believed" % (self.path, pid, why))
                sock.close()
                return False
        except OSError as e:
            sock.close()
            self.complain(e.errno, "waiting for warden at %s (%s)" % (self.path, e.strerror or e))
            return False
        self.sock = sock
        self.pid = pid
        self.buffer = b""
        self.outbox = b""
        self.gate_given = False
        self.trusted = False
        self.hello_at = now
        self.complained = None
        log("connected to warden (pid %d) at %s" % (pid, self.path))
        return True

    def hello_due(self, now):
        """Whether to say hello (again): connected, not yet believed, and the last hello unanswered believably."""
        return self.sock is not None and not self.trusted and now >= self.hello_at

    def complain(self, key, message):
        if self.complained != key:
            self.complained = key
            log(message)

    def close(self, why):
        if self.sock is not None:
            log("lost warden (%s): lilbee may run until its permit ends, no longer" % why)
            self.sock.close()
            self.sock = None
        self.outbox = b""
        for fd in self.fds:
            os.close(fd)
        self.fds = []

    def send(self, line, fd=None):
        """Says a line, whole and in order after those before it (what the socket does not take now waits in the
        outbox); a descriptor goes with the line's first byte. False when it did not go: not connected, or a descriptor
        that must wait for the outbox to empty (its line is said again later)."""
        if self.sock is None:
            return False
        data = (line + "\n").encode()
        self.flush()
        if fd is None:
            if len(self.outbox) + len(data) > MAX_OUTBOX:
                self.close("warden has not read what this supervisor said")
                return False
            self.outbox += data
            self.flush()
            return self.sock is not None
        if self.outbox or self.sock is None:
            return False
        try:
            sent = socket.send_fds(self.sock, [data], [fd])
        except BlockingIOError:
            return False
        except OSError as e:
            self.close(e.strerror or str(e))
            return False
        self.outbox = data[sent:]
        return True

    def flush(self):
        while self.sock is not None and self.outbox:
            try:
                sent = self.sock.send(self.outbox)
            except BlockingIOError:
                return
            except OSError as e:
                self.close(e.strerror or str(e))
                return
            self.outbox = self.outbox[sent:]

    def receive(self):
        """The lines waiting, each with the descriptors that came with it: a start's gate lock goes to the start line
        of the chunk it arrived with (a read may return warden's earlier lines with it, never a later one's)."""
        lines = []
        while self.sock is not None:
            try:
                data, fds, _, _ = socket.recv_fds(self.sock, 4096, 4)
            except BlockingIOError:
                break
            except OSError as e:
                self.close(e.strerror or str(e))
                break
            if not data:
                for fd in fds:
                    os.close(fd)
                self.close("it closed the connection")
                break
            self.buffer += data
            self.fds.extend(fds)
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                text = line.decode("ascii", "replace")
                given = []
                if text.startswith("start ") and self.fds:
                    given, self.fds = self.fds, []
                lines.append((text, given))
            if len(self.buffer) > MAX_LINE or len(self.fds) > 4:
                self.close("a line longer than %d bytes, or descriptors with no start" % MAX_LINE)
        return lines


class Health:
    """The kubelet's liveness probe on --health-port (and its readiness probe where the chart routes by role): any HTTP
    request is answered 200 while the supervisor's loop has turned within TURNED_WITHIN, 503 once it has not (a loop that
    stops turning could not stop lilbee). A thread of its own answers, so a flood cannot slow the loop, and the loop's
    stall shows however busy the port is.

    Each address family is bound on its own, IPv4 always and IPv6 where the kernel has it, and a port taken in either is
    this supervisor's end (it exits 1, before any lilbee, and the kubelet restarts its container): a squatter there would
    answer the kubelet's probes for a supervisor that no longer turns. Every process of the pod is one peer (loopback, or
    an address of the pod's own) and holds at most HEALTH_PER_PEER connections; each gets a second to send its request;
    the kubelet probes from the node and always finds room."""

    def __init__(self, port, supervisor, local=None):
        self.port = port
        self.supervisor = supervisor
        self.is_local = local or is_local
        self.listeners = listen_everywhere(port)
        self.open = {}
        self.local = {}
        self.closed = False

    def start(self):
        threading.Thread(target=self.serve, name="health", daemon=True).start()

    def close(self):
        """Stops answering (within a tick) and lets the port go."""
        self.closed = True

    def serve(self):
        selector = selectors.DefaultSelector()
        for listener in self.listeners:
            selector.register(listener, selectors.EVENT_READ)
        while not self.closed:
            for key, _ in selector.select(TICK / SECOND):
                if key.fileobj in self.listeners:
                    self.accept(key.fileobj, selector)
                else:
                    self.answer(key.fileobj, selector)
            now = time.monotonic_ns()
            for conn, (_, since) in list(self.open.items()):
                if now - since > SECOND:
                    self.drop(conn, selector)
        for conn in list(self.open):
            self.drop(conn, selector)
        for listener in self.listeners:
            listener.close()

    def accept(self, listener, selector):
        try:
            conn, address = listener.accept()
        except OSError as e:
            if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                # The connection stays queued and the listener readable: without a pause this thread would spin.
                time.sleep(TICK / SECOND)
            return
        peer = self.peer(address[0])
        if len(self.open) >= HEALTH_CONNECTIONS or sum(1 for p, _ in self.open.values() if p == peer) >= HEALTH_PER_PEER:
            conn.close()
            return
        conn.setblocking(False)
        self.open[conn] = (peer, time.monotonic_ns())
        selector.register(conn, selectors.EVENT_READ)

    def answer(self, conn, selector):
        try:
            if conn.recv(1024):
                stalled = time.monotonic_ns() - self.supervisor.turned_at > TURNED_WITHIN
                status = b"503 Service Unavailable" if stalled else b"200 OK"
                body = b"stalled\n" if stalled else b"ok\n"
                conn.send(b"HTTP/1.0 " + status + b"\r\nContent-Type: text/plain\r\nContent-Length: "
                          + str(len(body)).encode() + b"\r\n\r\n" + body)
        except BlockingIOError:
            return
        except OSError:
            pass
        self.drop(conn, selector)

    def drop(self, conn, selector):
        selector.unregister(conn)
        del self.open[conn]
        conn.close()

    def peer(self, address):
        """The pod itself for loopback and the pod's own addresses (any process of it can use any of them), else the
        address: the node, whence the kubelet probes, and anything beyond the pod."""
        if address.startswith("::ffff:"):
            address = address[len("::ffff:"):]
        if address not in self.local:
            if len(self.local) > 256:
                self.local.clear()
            self.local[address] = self.is_local(address)
        return "the pod" if self.local[address] else address


def listen_everywhere(port):
    """A listening socket per address family, IPv6 only where the kernel has it; a port taken is an error (SystemExit)."""
    listeners = []
    for family, address in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        try:
            listener = socket.socket(family)
        except OSError as e:
            if family == socket.AF_INET6 and e.errno == errno.EAFNOSUPPORT:
                log("no IPv6 in this kernel: the health port %d answers on IPv4 alone" % port)
                continue
            raise
        try:
            # SO_REUSEADDR lets a restarted supervisor bind past its predecessor's closing connections; on Linux it never
            # lets a second socket listen on a port one listens on. Never SO_REUSEPORT, which would share it with any
            # process of this UID.
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            listener.bind((address, port))
            listener.listen(HEALTH_CONNECTIONS)
        except OSError as e:
            listener.close()
            if family == socket.AF_INET6 and e.errno == errno.EADDRNOTAVAIL:
                log("IPv6 is off in this pod: the health port %d answers on IPv4 alone" % port)
                continue
            for opened in listeners:
                opened.close()
            what = "IPv4" if family == socket.AF_INET else "IPv6"
            raise SystemExit("lilbee-supervisor: the health port %d is taken on %s (%s): another process of the pod listens"
                             " there and would answer the kubelet's probes for this supervisor. Exiting, so that the"
                             " kubelet restarts this container; stop that process, or give --health-port another port"
                             % (port, what, e.strerror or e))
        listener.setblocking(False)
        listeners.append(listener)
    return listeners


def is_local(address):
    """Whether an address is this pod's own (loopback, or one of its interfaces'): a socket can be bound to it here."""
    try:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.bind((address, 0))
        return True
    except OSError:
        return False


class Warm:
    """The prepared process of --prepare: lilbee's command loaded in its own Python, waiting for a go. Until its go it
    holds no lock and no file of the data dir, and is reported to warden as warm, never as lilbee. warden proves a
    lilbee by the locks it holds, and takes a server.lock held by a process not reported as its pod's lilbee for a
    stranger's: so, as a cold lilbee is reported from its first instruction, before it can take server.lock, a prepared
    one is told to go, says it took the go ("going"), is reported to warden, and only then told to run lilbee's command
    ("run")."""

    def __init__(self, command, modules):
        self.command = command
        self.modules = modules
        self.process = None
        self.control = None
        self.ready = False
        self.next_try = 0
        self.handed = None
        self.handed_control = None
        self.handed_at = 0
        self.handed_going = False
        self.runner, why = runner_of(command)
        if self.runner is None:
            log("lilbee starts cold: %s" % why)

    def keep(self, now):
        """A prepared process waiting: started when there is none (asked while no lilbee runs, or for a spare)."""
        if self.runner is None:
            return
        if self.process is not None:
            if self.process.poll() is None:
                if not self.ready and b"ready " in read_some(self.control):
                    self.ready = True
                    log("lilbee is prepared (pid %d)" % self.process.pid)
                return
            log("the prepared lilbee ended before its permit (%s); lilbee starts cold until another is ready"
                % describe_exit(self.process.returncode))
            self.discard()
            self.next_try = now + PREPARE_AGAIN_AFTER
        if now < self.next_try:
            return
        ours, theirs = socket.socketpair()
        interpreter = self.runner[0]
        try:
            self.process = subprocess.Popen(
                interpreter + [os.path.abspath(__file__), "--prepared", "%d:%d" % (theirs.fileno(), os.getpid()), "--prepare",
                               ",".join(self.modules), "--"] + self.command,
                pass_fds=(theirs.fileno(),), start_new_session=True)
        except OSError as e:
            log("cannot prepare lilbee with %s: %s; it starts cold" % (interpreter[0], e.strerror or e))
            ours.close()
            self.next_try = now + PREPARE_AGAIN_AFTER
            return
        finally:
            theirs.close()
        ours.setblocking(False)
        self.control = ours
        self.ready = False

    def take(self, now):
        """The prepared process, told to run lilbee's command; None when there is none."""
        process, control = self.process, self.control
        self.process = self.control = None
        self.ready = False
        if process is None:
            return None
        try:
            if process.poll() is not None:
                control.close()
                return None
            control.setblocking(True)
            control.sendall(b"go\n")
            control.setblocking(False)
        except OSError:
            control.close()
            kill_group(process)
            return None
        self.handed, self.handed_control, self.handed_at, self.handed_going = process, control, now, False
        return process

    def going(self, now, process):
        """Whether `process` may be reported as lilbee: a cold one from its start; one told to go, once it says it took
        the go. One that has not said so within GOING_WITHIN is killed, as a lilbee that failed."""
        if process is not self.handed:
            return True
        if self.handed_going or b"going" in read_some(self.handed_control):
            self.handed_going = True
            return True
        if now - self.handed_at > GOING_WITHIN:
            log("the prepared lilbee (pid %d) did not take its go within %d s: killed" % (process.pid, GOING_WITHIN // SECOND))
            self.handed_control.close()
            self.handed = self.handed_control = None
            kill_group(process)
        return False

    def reported(self, process):
        """`process` has been reported to warden as lilbee: it may run lilbee's command now."""
        if process is self.handed and self.handed_going:
            try:
                self.handed_control.send(b"run\n")
            except OSError:
                pass  # gone: its exit is seen as any lilbee's
            self.handed_control.close()
            self.handed = self.handed_control = None

    def waiting(self):
        """Whether a prepared process told to go is yet to be heard from: the loop then looks again soon."""
        return self.handed is not None

    def pid(self):
        """The prepared process's pid once it is ready, else None."""
        return self.process.pid if self.process is not None and self.ready else None

    def discard(self):
        for control in (self.control, self.handed_control):
            if control is not None:
                control.close()
        for process in (self.process, self.handed):
            if process is not None:
                kill_group(process)
        self.process = self.control = self.handed = self.handed_control = None
        self.ready = False


def read_some(sock):
    """What a control socket has to say now (a few short lines at most), without waiting."""
    try:
        return sock.recv(MAX_LINE)
    except OSError:
        # Nothing waiting (BlockingIOError), or the process gone: its exit is seen as any lilbee's.
        return b""


def runner_of(command):
    """How a prepared Python runs lilbee's command: ((interpreter argv, "script" or "module", path or module), None),
    or (None, why not) when the command is neither a Python script (a console script) nor `python -m`."""
    program = shutil.which(command[0])
    if program is None:
        return None, "%s is not on PATH" % command[0]
    if os.path.basename(program).startswith("python") and len(command) >= 3 and command[1] == "-m":
        return ([program], "module", command[2]), None
    try:
        with open(program, "rb") as f:
            head = f.read(1024).split(b"\n")
    except OSError as e:
        return None, "cannot read %s (%s)" % (program, e.strerror)
    interpreter = None
    if head[0].startswith(b"#!"):
        try:
            interpreter = shlex.split(head[0][2:].decode())
        except (UnicodeDecodeError, ValueError):
            interpreter = None
    if interpreter == ["/bin/sh"] and len(head) > 1:
        # pip's form for an interpreter path too long for a #! line: '''exec' "/path/to/python" "$0" "$@"
        match = PIP_LONG_SHEBANG.match(head[1])
        interpreter = [(match.group(1) or match.group(2)).decode()] if match else None
    if not interpreter or not os.path.basename(interpreter[-1]).startswith("python"):
        return None, "%s is not a Python script (its first line names no python)" % program
    return (interpreter, "script", program), None


def name_self(name):
    """The process's name as ps and top show it (comm, 15 bytes): a prepared lilbee tells itself apart from a running
    one. A name says nothing to warden, which any process of the pod could take."""
    try:
        with open("/proc/self/comm", "w") as comm:
            comm.write(name)
    except OSError:
        pass


def describe_exit(code):
    return "signal %d" % -code if code < 0 else "exit %d" % code


def kill_group(process):
    """SIGKILL to a process's own group (a session of its own, start_new_session), then reaped."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


def prepare(modules):
    """Imports each module, and for NAME.* the package and all its modules; returns (modules loaded, failures)."""
    failed = 0
    for name in modules:
        walk = name.endswith(".*")
        name = name[:-2] if walk else name
        try:
            package = importlib.import_module(name)
        except Exception:
            failed += 1
            continue
        if walk and hasattr(package, "__path__"):
            for info in pkgutil.walk_packages(package.__path__, name + ".", onerror=lambda _: None):
                try:
                    importlib.import_module(info.name)
                except Exception:
                    failed += 1
    return len(sys.modules), failed


def prepared(fd, parent, modules, command):
    """The prepared process: loads lilbee, then runs it once the supervisor says go; told nothing (the supervisor gone,
    or replacing it), it exits, and it dies with the supervisor (as a lilbee started cold does). The go is taken by a
    thread from the start and said so at once ("going"), even while the imports go on; lilbee's command runs once they
    are done and the supervisor has reported it to warden ("run")."""
    tied_to(parent)()
    control = socket.socket(fileno=fd)
    name_self("lilbee-prepared")
    runner, why = runner_of(command)
    if runner is None:
        log("cannot prepare lilbee: " + why)
        return 2
    _, kind, target = runner
    went = threading.Event()

    def listen():
        try:
            data = control.recv(64)
        except OSError:
            data = b""
        if data != b"go\n":
            os._exit(0)
        try:
            control.sendall(b"going\n")
            # Run only once reported to warden as lilbee: the report comes before any server.lock of ours.
            ran = control.recv(64)
        except OSError:
            ran = b""
        if ran != b"run\n":
            os._exit(0)
        went.set()

    threading.Thread(target=listen, name="go", daemon=True).start()
    loaded, failed = prepare(modules)
    try:
        control.sendall(b"ready %d modules loaded, %d failed to import\n" % (loaded, failed))
    except OSError:
        pass  # taken before it was ready: its go is heard all the same
    went.wait()
    control.close()
    name_self("lilbee")
    if kind == "module":
        sys.argv = [target] + command[3:]
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.argv = [target] + command[1:]
        runpy.run_path(target, run_name="__main__")
    return 0


def start_ticks(pid):
    """When the process started, in clock ticks since boot (names this instance); 0 when gone."""
    return stat_field(pid, 22)


def main(argv):
    started = time.monotonic_ns()
    parser = argparse.ArgumentParser(
        prog="lilbee-supervisor.py",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Runs lilbee only while this pod's warden (gate mode) says it may, and stops it the moment that"
        " is no longer so. Everything after -- is lilbee's command.",
        epilog="Example (what warden's chart runs):\n"
        "  python3 lilbee-supervisor.py --socket /run/warden/switch.sock --health-port 8081 --start-after 2 \\\n"
        "      --prepare 'lilbee.cli,lilbee.server.*' --prepare-after 2 --spare -- lilbee serve --port 8080\n\n"
        "Exit codes: lilbee's, once a SIGTERM or SIGINT passed on to it has ended it (0 when none ran); 2: usage.",
    )
    # Options only, no environment: the chart and k8s/ say every one on the command line, where a reader sees them.
    parser.add_argument("--socket", default="/run/warden/switch.sock",
                        help="warden's switch socket, on a volume only warden's and lilbee's containers mount"
                        " (default %(default)s)")
    parser.add_argument("--permit", type=float, default=5.0,
                        help="the longest a permit may last, in seconds, whatever warden says (default %(default)s)")
    # The permit's old name, taken but not shown: the reference lilbee image ships this file, so an image and manifests
    # of different releases meet.
    parser.add_argument("--validity", dest="permit", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--grace", type=float, default=2.0,
                        help="seconds between SIGTERM and SIGKILL of lilbee's process group (default %(default)s)")
    parser.add_argument("--start-after", type=float, default=0.0,
                        help="start no lilbee before this many seconds from the supervisor's start: the liveness probe's"
                        " initialDelaySeconds, so a lilbee only ever runs under it (default %(default)s)")
    parser.add_argument("--health-port", type=int, default=0,
                        help="answer the kubelet's liveness probe here (default: 0, none)")
    parser.add_argument("--prepare", default="",
                        help="modules to import before a permit, comma-separated, NAME.* for a package and all its"
                        " modules (for lilbee: lilbee.cli,lilbee.server.*): lilbee then waits warm in a prepared"
                        " process and runs in it on a permit, its imports done; lilbee's command must be a Python"
                        " script or python -m. Empty (the default): lilbee starts cold")
    parser.add_argument("--prepare-after", type=float, default=0.0,
                        help="with --prepare, start no prepared process within this many seconds of a lilbee's start or"
                        " exit here: a lilbee starting, here or in the pod that took over, has the CPU first (default"
                        " %(default)s)")
    parser.add_argument("--spare", action="store_true",
                        help="with --prepare, keep a prepared process while lilbee runs too, so that a lilbee that crashes"
                        " starts again warm; it costs a second loaded Python's memory (default: off)")
    parser.add_argument("--prepared", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--warden-uid", type=int, default=os.geteuid(),
                        help="the UID warden runs as: a socket served by any other is not believed (default: this"
                        " process's, %(default)s)")
    parser.add_argument("--same-container-warden", action="store_true",
                        help="believe a warden in this process's own mount namespace too: outside a pod, where warden and"
                        " lilbee are no containers. In a pod, any process of lilbee's container could then speak for"
                        " warden; the chart never sets it")
    if "--" not in argv:
        if "-h" in argv or "--help" in argv:
            parser.parse_args(["--help"])
        parser.print_usage(sys.stderr)
        print("lilbee-supervisor.py: error: give lilbee's command after --, e.g. -- lilbee serve --port 8080", file=sys.stderr)
        return 2
    split = argv.index("--")
    args = parser.parse_args(argv[:split])
    command = argv[split + 1:]
    if not command:
        parser.error("nothing after --: give lilbee's command, e.g. -- lilbee serve --port 8080")
    modules = [m.strip() for m in args.prepare.split(",") if m.strip()]
    if args.prepared is not None:
        fd, parent = (int(part) for part in args.prepared.split(":"))
        return prepared(fd, parent, modules, command)
    if args.permit <= 0 or args.grace <= 0 or args.start_after < 0 or args.prepare_after < 0:
        parser.error("--permit and --grace must be positive, --start-after and --prepare-after not negative")
    harden()
    return Supervisor(args, command, modules, started).run()


PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
_libc = []


def prctl(option, value):
    """prctl(2), through ctypes: the standard library has no binding. libc is loaded once, before any fork."""
    if not _libc:
        import ctypes
        _libc.append((ctypes, ctypes.CDLL(None, use_errno=True)))
    ctypes, libc = _libc[0]
    if libc.prctl(option, value, 0, 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def harden():
    """Closes this process's /proc/<pid>/fd, fdinfo and mem, and ptrace, to every process without CAP_SYS_PTRACE, those of
    its own UID included: lilbee's container runs as warden's UID, and the gate lock's descriptor and warden's connection
    are this process's alone (a descriptor taken with pidfd_getfd could unlock the gate, a connection taken could speak
    for it). lilbee, exec'd, is dumpable again: warden proves it through its fdinfo. Without prctl(2) (a Python without
    ctypes) this supervisor can neither keep its descriptors nor tie lilbee's life to its own: it does not run."""
    try:
        prctl(PR_SET_DUMPABLE, 0)
    except (ImportError, OSError, AttributeError) as e:
        raise SystemExit("lilbee-supervisor: cannot call prctl(2) (%s): it keeps the gate lock from lilbee's container"
                         " and ends lilbee with itself through it. Use a Python with its whole standard library (ctypes)" % e)


def tied_to(parent):
    """What a process of lilbee's runs first (preexec_fn for a cold start, and the prepared process's first step): it gets
    SIGKILL the moment `parent`, this supervisor, is gone, however it dies, and ends at once if it is gone already. The
    gate lock is the supervisor's alone, so lilbee must not outlive it; the kernel sends the signal as the supervisor
    exits, before anything else can run lilbee's code."""
    def tie():
        try:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        except (ImportError, OSError, AttributeError):
            os._exit(127)
        if os.getppid() != parent:
            os._exit(127)
    return tie


class Supervisor:
    def __init__(self, args, command, modules, started):
        self.command = command
        self.warm = Warm(command, modules) if modules else None
        self.rules = Rules(int(args.permit * SECOND), int(args.grace * SECOND),
                           not_before=started + int(args.start_after * SECOND), prepares=self.warm is not None,
                           spare=args.spare, prepare_after=int(args.prepare_after * SECOND), prepare_from=started)
        self.warden = Warden(args.socket, WardenIdentity(args.warden_uid, args.same_container_warden))
        # Bound before anything else: a port taken ends this supervisor before any lilbee (see Health).
        self.health = Health(args.health_port, self) if args.health_port else None
        self.turned_at = started
        self.gate_fd = None
        self.lilbee = None
        self.launched_at = 0
        self.last_report = None
        self.report_at = 0
        self.ack_wanted = None
        self.wake_r, self.wake_w = socket.socketpair()
        self.wake_r.setblocking(False)
        self.wake_w.setblocking(False)
        self.signals = []

    def run(self):
        signal.set_wakeup_fd(self.wake_w.fileno())
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda n, frame: self.signals.append(n))
        signal.signal(signal.SIGCHLD, lambda n, frame: None)
        log("lilbee (%s) runs only while warden at %s says so" % (" ".join(self.command), self.warden.path))
        selector = selectors.DefaultSelector()
        selector.register(self.wake_r, selectors.EVENT_READ)
        if self.health:
            self.health.start()
        registered = None
        while True:
            now = time.monotonic_ns()
            self.turned_at = now
            if self.warden.connect(now):
                self.last_report = None
                # A stop is answered to the warden that said it: another numbers its stops its own way.
                self.ack_wanted = None
            if self.warden.hello_due(now):
                self.warden.send("hello %d %d" % (PROTOCOL, os.getpid()))
                self.warden.hello_at = now + HELLO_AGAIN
            if self.warden.sock is not registered:
                if registered is not None:
                    selector.unregister(registered)
                registered = self.warden.sock
                if registered is not None:
                    selector.register(registered, selectors.EVENT_READ)
            code = self.turn(now)
            if code is not None:
                # The interpreter puts back the default handlers as it ends: a repeated SIGTERM then would end this
                # process by the signal instead of with lilbee's code.
                for signum in (signal.SIGTERM, signal.SIGINT):
                    signal.signal(signum, signal.SIG_IGN)
                return code
            tick = TICK // 10 if self.warm is not None and self.warm.waiting() else TICK
            timeout = max(0, min(self.rules.wake_at(now), now + tick) - time.monotonic_ns()) / SECOND
            selector.select(timeout)
            try:
                while self.wake_r.recv(64):
                    pass
            except BlockingIOError:
                pass

    def turn(self, now):
        """One pass: signals, lilbee's exit, warden's words, the timers, the health probe; an exit code to end with."""
        while self.signals:
            if not self.rules.terminating:
                # The pod (or this container) is going away: warden hands the gate to a standby at once, rather than
                # once lilbee has gone and the kubelet has stopped warden too. It lets the gate go only as safely as
                # ever: this supervisor keeps the gate lock until lilbee has exited.
                self.warden.send("step-down")
            code = self.apply(now, "signal", self.signals.pop(0))
            if code is not None:
                return code
        if self.lilbee is not None:
            rc = self.lilbee.poll()
            if rc is not None:
                code = 128 - rc if rc < 0 else rc
                log("lilbee exited (%d)%s" % (code, "" if self.rules.terminating else "; started again on warden's next permit"))
                self.lilbee = None
                result = self.apply(now, "exited", code)
                if result is not None:
                    return result
        self.warden.flush()
        for line, fds in self.warden.receive():
            self.hear(now, line, fds)
        self.apply(now, "tick")
        self.report(now)
        return None

    def hear(self, now, line, fds):
        words = line.split()
        kind = words[0] if words else ""
        try:
            if kind == "hello" and len(words) == 3 and int(words[1]) == PROTOCOL and not self.warden.trusted:
                # Read now, not at the turn's start: a hello warden wrote during this turn is no later than this.
                lag = time.monotonic_ns() - int(words[2])
                if lag < -CLOCK_SKEW // 100 or lag > CLOCK_SKEW:
                    # Asked again (hello_at): a read held back on a loaded node says nothing of the next, and a warden
                    # on another clock (a time namespace) is never believed, however often it answers.
                    self.warden.complain("clock", "warden's monotonic clock read %d ms from this container's: not"
                                         " believed; asking again" % (lag // 1_000_000))
                else:
                    self.warden.trusted = True
                    self.warden.identity.believe(self.warden.pid)
            elif not self.warden.trusted:
                pass
            elif kind == "start" and len(words) == 2 and len(fds) <= 1:
                until = int(words[1])
                # The gate lock comes with it, except where a Lease alone elects (a volume that cannot lock).
                fd = fds.pop() if fds else None
                if self.rules.accepts_gate():
                    if self.gate_fd is not None:
                        os.close(self.gate_fd)
                    self.gate_fd = fd
                    # The warden that gave it holds it: not given back to it.
                    self.warden.gate_given = True
                elif fd is not None:
                    os.close(fd)
                self.apply(now, "start", until)
            elif kind == "go" and len(words) == 2:
                self.apply(now, "go", int(words[1]))
            elif kind == "stop":
                # Obeyed however it is worded: its number only says which stop to answer as done.
                if self.rules.permit_until or self.lilbee is not None:
                    log("warden: %s" % " ".join(words[2:])[:200])
                if len(words) >= 2 and words[1].isdigit():
                    self.ack_wanted = int(words[1])
                self.apply(now, "stop")
        except ValueError:
            pass
        for fd in fds:
            os.close(fd)

    def apply(self, now, event, arg=None):
        for action in self.rules.step(now, event, arg):
            kind = action[0]
            if kind == "start":
                self.start(now)
            elif kind == "term":
                log("lilbee's permit has ended: SIGTERM to its process group, SIGKILL in %.1f s" % (self.rules.grace / SECOND))
                self.signal_group(signal.SIGTERM)
            elif kind == "kill":
                log("lilbee outlived its grace: SIGKILL to its process group")
                self.signal_group(signal.SIGKILL)
            elif kind == "signal":
                self.signal_group(action[1])
            elif kind == "release":
                if self.gate_fd is not None:
                    os.close(self.gate_fd)
                    self.gate_fd = None
            elif kind == "warm":
                self.warm.keep(now)
            elif kind == "exit":
                if self.warm is not None:
                    self.warm.discard()
                # Its last word: no lilbee runs and none ever will from here, so a stopping warden may let its Lease go.
                self.warden.send("exiting")
                return action[1]
        return None

    def start(self, now):
        prepared = self.warm.take(now) if self.warm is not None else None
        if prepared is not None:
            log("warden's permit: starting lilbee in its prepared process (pid %d)" % prepared.pid)
            self.lilbee = prepared
            self.launched_at = now
            return
        log("warden's permit: starting lilbee")
        try:
            self.lilbee = subprocess.Popen(self.command, start_new_session=True, preexec_fn=tied_to(os.getpid()))
            self.launched_at = now
        except OSError as e:
            log("cannot start %s: %s" % (self.command[0], e.strerror or e))
            self.lilbee = None
            self.apply(now, "exited", 127)

    def signal_group(self, signum):
        if self.lilbee is None:
            return
        try:
            # Its own session and group (start_new_session): the group is lilbee and what it started, nobody else.
            os.killpg(self.lilbee.pid, signum)
        except ProcessLookupError:
            pass
        except PermissionError as e:
            log("cannot signal lilbee's group %d: %s" % (self.lilbee.pid, e.strerror))

    def gate_report(self):
        """The gate file whose lock this supervisor holds for its lilbee: "gate <st_dev> <st_ino>", or "gate none". A
        warden stops a lilbee held under another gate file than its own."""
        if self.gate_fd is None:
            return "gate none"
        try:
            held = os.fstat(self.gate_fd)
        except OSError:
            return "gate none"
        return "gate %d %d" % (held.st_dev, held.st_ino)

    def report(self, now):
        """What runs, the permit held (0: none), the prepared process and the gate lock held, to the warden this
        supervisor believes (none before: warden's words wait for it): on every change and once a second. The first
        report to a warden carries the gate lock's descriptor, if one is held: a restarted warden holds the gate again
        through it, and learns how long a permit of its previous run may still keep a lilbee."""
        if self.lilbee is not None and self.rules.lilbee != "none" and (self.warm is None or self.warm.going(now, self.lilbee)):
            state = "lilbee %d %d %d" % (self.lilbee.pid, start_ticks(self.lilbee.pid), self.launched_at)
        else:
            state = "lilbee none"
        held = self.rules.permit_until if self.rules.lilbee == "running" or self.rules.has_gate else 0
        warm = self.warm.pid() if self.warm is not None else None
        warm = "warm none" if warm is None else "warm %d" % warm
        gate = self.gate_report()
        if self.warden.trusted and ((state, held, warm, gate) != self.last_report or now >= self.report_at):
            # One write: warden reads it whole in one round, never a lilbee without the gate lock it runs under; the
            # descriptor goes with its first line, the gate's.
            give = self.gate_fd if not self.warden.gate_given else None
            if self.warden.send("\n".join((gate, state, "permit %d" % held, warm)), give):
                self.warden.gate_given = self.warden.gate_given or give is not None
                self.last_report = (state, held, warm, gate)
                self.report_at = now + REPORT_EVERY
        if self.warm is not None and self.lilbee is not None and state != "lilbee none":
            self.warm.reported(self.lilbee)
        if self.ack_wanted is not None and self.rules.lilbee == "none" and not self.rules.has_gate:
            # warden's stop is done: no lilbee, no permit. A warden letting its Lease go waits for this.
            self.warden.send("stopped %d" % self.ack_wanted)
            self.ack_wanted = None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
