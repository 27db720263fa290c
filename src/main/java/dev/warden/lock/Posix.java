package dev.warden.lock;

/**
 * The few libc calls warden's locks are made of. One implementation ({@link NativePosix}) reaches
 * libc through the FFM API; tests pass fakes to reach error paths no local filesystem produces.
 */
public interface Posix {

    /**
     * Opens a lock file for reading and writing, never following a symbolic link and never
     * leaking the descriptor into a child process; creates it (mode 0666 less the umask) when
     * {@code create} is set.
     */
    int openLockFile(String path, boolean create) throws ErrnoException;

    /** {@code flock(fd, LOCK_EX | LOCK_NB)} when {@code wait} is false, {@code LOCK_EX} otherwise. */
    void lockExclusive(int fd, boolean wait) throws ErrnoException;

    void close(int fd);

    FileId fstat(int fd) throws ErrnoException;

    FileId stat(String path) throws ErrnoException;

    /**
     * {@code kill(pid, signal)}; a negative pid names a process group, as in kill(2).
     *
     * @return false when no such process or group exists (ESRCH)
     */
    boolean kill(long pid, int signal) throws ErrnoException;

    /**
     * Opens an existing file to look at the record locks on it: read-write (the look asks about a
     * write lock), never created, never through a symbolic link, never blocking on a FIFO.
     */
    int openExisting(String path) throws ErrnoException;

    /**
     * {@code fcntl(F_GETLK)}: which record lock of another process would stop this one from taking
     * a write lock on {@code [start, start + length)}. Asks the kernel; takes nothing.
     */
    RecordLock conflictingRecordLock(int fd, long start, long length) throws ErrnoException;

    /** A POSIX record lock another process holds, as {@code F_GETLK} reports the first it finds. */
    enum RecordLock {
        NONE, READ, WRITE
    }

    /** A libc call that failed, with the errno it left behind. */
    final class ErrnoException extends Exception {
        private final int errno;

        public ErrnoException(String call, int errno, String description) {
            super(call + ": " + description + " (errno " + errno + ")");
            this.errno = errno;
        }

        public int errno() {
            return errno;
        }
    }
}
