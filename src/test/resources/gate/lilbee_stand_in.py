"""A stand-in for `lilbee serve`, for the tests and soaks that need many: it takes server.lock as lilbee's filelock
does (an exclusive flock, asked again every 50 ms, for 15 s, then exit 3), says so on one line of its state file
("serving <pid> <device> <inode>"), and holds it until it dies. On SIGTERM it writes "term <pid>" there first, and
exits 143 unless told to ignore it.

    python3 lilbee_stand_in.py <server.lock> <state file> [ignore-term]
"""

import fcntl
import os
import signal
import sys
import time

lock, state = sys.argv[1], sys.argv[2]
ignore_term = len(sys.argv) > 3 and sys.argv[3] == "ignore-term"


def say(line):
    with open(state, "a") as f:
        f.write(line + "\n")


def term(signum, frame):
    say("term %d" % os.getpid())
    if not ignore_term:
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
