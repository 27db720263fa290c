"""A hostile process of lilbee's container, as lilbee's own dependencies could run one: warden's UID, lilbee's mounts.
Each mode is one of issue 48's attacks on gate mode's switch; what it managed goes to the report file, a line a thing.

    python3 neighbour.py fake-warden SOCKET DATA_DIR REPORT SECONDS
        A socket of its own renamed over SOCKET (again and again: warden puts its own back), and connections to the one
        there first, greeted, to push the supervisor off it; every supervisor that connects is answered with this
        kernel's clock and told go; a descriptor given to it is unlocked, and server.lock renamed away then.
    python3 neighbour.py forge SOCKET DATA_DIR REPORT SECONDS
        Connects as a supervisor would and reports that no lilbee runs, again and again; a start's descriptor given to it
        is unlocked, and server.lock renamed away then.
    python3 neighbour.py step-down SOCKET REPORT SECONDS PERIOD
        Connects as a supervisor would and asks warden to step down every PERIOD seconds.
    python3 neighbour.py squat-v6 PORT REPORT SECONDS
        Binds [::]:PORT alone (IPv6 only) the moment it is free, and answers 200 to every request there.
"""

import fcntl
import os
import selectors
import socket
import sys
import time


def report(path, line):
    with open(path, "a") as f:
        f.write(line + "\n")


def unlock(fds, data, path):
    """Every descriptor given to it unlocked (the lock ends for whoever shares its open file), server.lock renamed."""
    for fd in fds:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
            report(path, "unlocked a descriptor it was given")
        except OSError as e:
            report(path, "could not unlock a descriptor: %s" % e)
    if fds and data:
        try:
            os.rename(os.path.join(data, "server.lock"), os.path.join(data, "server.lock.away-%d" % time.time_ns()))
            report(path, "renamed server.lock away")
        except OSError as e:
            report(path, "could not rename server.lock: %s" % e)


def connect(socket_path):
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(1)
    conn.connect(socket_path)
    conn.setblocking(False)
    conn.send(b"hello 1 %d\n" % os.getpid())
    return conn


def drain(conn):
    """What waits on conn: (bytes, descriptors); (None, []) once it is closed."""
    got, fds = b"", []
    while True:
        try:
            data, more, _, _ = socket.recv_fds(conn, 4096, 4)
        except BlockingIOError:
            return got, fds
        except OSError:
            return None, fds
        if not data:
            return None, fds + more
        got += data
        fds += more


def as_supervisor(socket_path, data, path, seconds, say, every):
    """Connected as a supervisor would be, saying `say` every `every` seconds; reconnects when let go."""
    deadline = time.monotonic() + seconds
    conn, refused = None, 0
    while time.monotonic() < deadline:
        if conn is None:
            try:
                conn = connect(socket_path)
                report(path, "connected")
            except OSError:
                time.sleep(0.1)
                continue
        try:
            conn.send(say)
        except OSError:
            pass
        got, fds = drain(conn)
        unlock(fds, data, path)
        if got is None:
            refused += 1
            conn.close()
            conn = None
        elif got:
            report(path, "heard: " + got.decode("ascii", "replace").replace("\n", " | ")[:200])
        time.sleep(every)
    report(path, "let go %d times" % refused)


def fake_warden(socket_path, data, path, seconds):
    deadline = time.monotonic() + seconds
    directory = os.path.dirname(socket_path)
    flood = []
    for _ in range(6):
        try:
            flood.append(connect(socket_path))
        except OSError:
            break
    report(path, "greeted %d connections to the socket there first" % len(flood))
    own = os.path.join(directory, ".fake-%d" % os.getpid())
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(own)
    except OSError as e:
        report(path, "cannot bind in %s: %s" % (directory, e.strerror))
        listener = None
    if listener is not None:
        listener.listen(8)
        listener.setblocking(False)
    served = []
    renamed = False
    while time.monotonic() < deadline:
        if listener is not None:
            try:
                # Renamed over the path; a hard link keeps its own name for the next time.
                os.link(own, own + ".again")
                os.rename(own + ".again", socket_path)
                if not renamed:
                    report(path, "renamed its socket over the switch path")
                renamed = True
            except OSError as e:
                if not renamed:
                    report(path, "cannot rename over the switch path: %s" % e.strerror)
                    renamed = None
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    break
                conn.setblocking(False)
                served.append(conn)
                report(path, "a supervisor connected to it")
        for conn in list(served):
            got, fds = drain(conn)
            unlock(fds, data, path)
            if got is None:
                served.remove(conn)
                continue
            if got and b"hello" in got:
                report(path, "a supervisor said hello to it")
                conn.send(b"hello 1 %d\n" % time.monotonic_ns())
            try:
                conn.send(b"go %d\n" % (time.monotonic_ns() + 5_000_000_000))
            except OSError:
                pass
        for conn in flood:
            unlock(drain(conn)[1], data, path)
        time.sleep(0.1)


def squat_v6(port, path, seconds):
    deadline = time.monotonic() + seconds
    listener = socket.socket(socket.AF_INET6)
    listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    # As any squatter would: the port's server side holds the probes' connections in TIME_WAIT for a minute.
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    while True:
        try:
            listener.bind(("::", port))
            break
        except OSError:
            time.sleep(0.005)
    listener.listen(16)
    report(path, "holds [::]:%d" % port)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    while time.monotonic() < deadline:
        for _ in selector.select(0.1):
            conn, _ = listener.accept()
            conn.settimeout(1)
            try:
                conn.recv(1024)
                conn.send(b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
            except OSError:
                pass
            conn.close()


def main(argv):
    mode = argv[0]
    if mode == "fake-warden":
        fake_warden(argv[1], argv[2], argv[3], float(argv[4]))
    elif mode == "forge":
        as_supervisor(argv[1], argv[2], argv[3], float(argv[4]), b"lilbee none\npermit 0\nwarm none\n", 0.2)
    elif mode == "step-down":
        as_supervisor(argv[1], None, argv[2], float(argv[3]), b"step-down\n", float(argv[4]))
    elif mode == "squat-v6":
        squat_v6(int(argv[1]), argv[2], float(argv[3]))
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main(sys.argv[1:])
