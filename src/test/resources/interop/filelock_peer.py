"""A lock peer built on the real filelock package, as lilbee uses it.

usage: filelock_peer.py file|read|write PATH TIMEOUT
  file   filelock.FileLock(PATH).acquire(timeout=TIMEOUT)
  read   filelock.ReadWriteLock(PATH).acquire_read(timeout=TIMEOUT)   (a sync or import)
  write  filelock.ReadWriteLock(PATH).acquire_write(blocking=False)   (a reset: never waits)
Prints "trying", then "locked" and holds until stdin closes or it is killed; or "timeout" and exits 3.
"""
import sys

import filelock
from filelock import FileLock, ReadWriteLock, Timeout

kind, path, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
print("trying", flush=True)
try:
    if kind == "file":
        lock = FileLock(path)
        lock.acquire(timeout=timeout)
    else:
        lock = ReadWriteLock(path, is_singleton=False)
        if kind == "read":
            lock.acquire_read(timeout=timeout)
        else:
            lock.acquire_write(blocking=False)
except Timeout:
    print("timeout", flush=True)
    sys.exit(3)
print("locked", flush=True)
sys.stdin.read()
lock.release()
