"""A stand-in for `lilbee serve`, for the tests and soaks that need many: it takes server.lock as lilbee's filelock
does (an exclusive flock, asked again every 50 ms, for 15 s, then exit 3), says so on one line of its state file
("serving <pid> <device> <inode>"), and holds it until it dies. On SIGTERM it writes "term <pid>" there first, and
exits 143 unless told to ignore it; told to linger, it lets server.lock go first, as lilbee's serve does last thing,
writes "released <pid>", and exits that many seconds later (lilbee's own interpreter takes 0.6 s to exit).

    python3 lilbee_stand_in.py <server.lock> <state file> [ignore-term] [linger=SECONDS]
"""

import fcntl
import os
import signal
import sys
import time

lock, state = sys.argv[1], sys.argv[2]
ignore_term = "ignore-term" in sys.argv[3:]
linger = next((float(a.split("=", 1)[1]) for a in sys.argv[3:] if a.startswith("linger=")), None)
fd = None


def say(line):
    with open(state, "a") as f:
        f.write(line + "\n")


def term(signum, frame):
    say("term %d" % os.getpid())
    if ignore_term:
        return
    if linger is not None and fd is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
        say("released %d" % os.getpid())
        time.sleep(linger)
    os._exit(143)


signal.signal(signal.SIGTERM, term)
deadline = time.monotonic() + 15
while True:
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        break
    except BlockingIOError:
        os.close(fd)
        if time.monotonic() > deadline:
            say("gave-up %d" % os.getpid())
            sys.exit(3)
        time.sleep(0.05)
st = os.fstat(fd)
say("serving %d %d %d" % (os.getpid(), st.st_dev, st.st_ino))
while True:
    time.sleep(60)
