package dev.warden.lock;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;

/**
 * The few libc calls warden's locks, its reads of the shared volume and the gate's switch socket are made of. One
 * implementation ({@link NativePosix}) reaches libc through the FFM API; tests pass fakes to reach error paths no local
 * filesystem produces, and the gate's simulation a kernel of its own, under the very classes that call these.
 *
 * <p>Every open is relative to a directory descriptor, never follows a symbolic link in its last
 * component, never blocks on a FIFO and never leaks into a child process: a neighbour on the volume
 * can swap any name for a link or a FIFO between a check and a use.
 */
public interface Posix {

    /** The working directory as a directory descriptor, for {@link #openAt} with an absolute path. */
    int AT_FDCWD = -100;

    /** How {@link #openAt} opens a file. */
    enum Open {
        /** Read only: a record, a marker, a header, a lock file warden looks at or waits on (flock needs no more). */
        READ,
        /** Read and write, created (mode 0666 less the umask, as filelock creates it) when missing. */
        READ_WRITE_CREATE,
        /** Write only, created, and refused if the name exists at all (even as a dangling link). */
        CREATE_NEW,
        /** A directory, to open names relative to. */
        DIRECTORY
    }

    /** {@code openat(dirFd, name, how | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)}. */
    int openAt(int dirFd, String name, Open how) throws ErrnoException;

    /** {@code flock(fd, LOCK_EX | LOCK_NB)} when {@code wait} is false, {@code LOCK_EX} otherwise. */
    void lockExclusive(int fd, boolean wait) throws ErrnoException;

    /**
     * {@code flock(fd, LOCK_EX)} waited for in the kernel off the caller's thread: completes once the lock is this open
     * file's, or exceptionally with the errno. The wait ends the instant the holder lets go or dies.
     */
    default CompletableFuture<Void> lockWhenFree(int fd) {
        CompletableFuture<Void> granted = new CompletableFuture<>();
        Thread.ofPlatform().daemon().name("warden-lock-wait").start(() -> {
            try {
                lockExclusive(fd, true);
                granted.complete(null);
            } catch (ErrnoException | RuntimeException e) {
                granted.completeExceptionally(e);
            }
        });
        return granted;
    }

    /**
     * {@code fchmodat(dirFd, name, mode, AT_SYMLINK_NOFOLLOW)}: a socket warden listens on made its UID's alone. A link
     * at the name is never followed (EOPNOTSUPP): another process may have swapped one in for the socket.
     */
    void chmodAt(int dirFd, String name, int mode) throws ErrnoException;

    /** The path the kernel names an open descriptor by ({@code /proc/self/fd/<fd>}): where a directory opened now is. */
    default Path pathOf(int fd) throws IOException {
        return Files.readSymbolicLink(Path.of("/proc/self/fd", Integer.toString(fd)));
    }

    /** {@code flock(fd, LOCK_UN)}: the lock on the open file ends, for every process holding a descriptor of it. */
    void unlock(int fd) throws ErrnoException;

    void close(int fd);

    FileStat fstat(int fd) throws ErrnoException;

    /** {@code fstatat(dirFd, name, AT_SYMLINK_NOFOLLOW)}: a link is reported as a link, never followed. */
    FileStat statAt(int dirFd, String name) throws ErrnoException;

    /** Reads from {@code fd} until end of file or until {@code max} bytes are read, whichever comes first. */
    byte[] read(int fd, int max) throws ErrnoException;

    /** Writes all of {@code bytes} to {@code fd}. */
    void write(int fd, byte[] bytes) throws ErrnoException;

    /** {@code unlinkat(dirFd, name, 0)}; false when there was no such name. */
    boolean unlinkAt(int dirFd, String name) throws ErrnoException;

    /** {@code mkdirat(dirFd, name, 0777)}: a directory, its mode the umask's to decide. */
    void mkdirAt(int dirFd, String name) throws ErrnoException;

    /** {@code renameat(dirFd, from, dirFd, to)}: atomically replaces {@code to}. */
    void renameAt(int dirFd, String from, String to) throws ErrnoException;

    /**
     * {@code kill(pid, signal)}; a negative pid names a process group, as in kill(2).
     *
     * @return false when no such process or group exists (ESRCH)
     */
    boolean kill(long pid, int signal) throws ErrnoException;

    /**
     * {@code pidfd_open(pid, 0)} (Linux 5.3): a descriptor that names the process now at {@code pid}, and only
     * that one; a signal sent through it can never reach a process that reuses the pid later.
     *
     * @throws ErrnoException ESRCH when no such process exists, ENOSYS on an older kernel
     */
    int pidfdOpen(long pid) throws ErrnoException;

    /**
     * {@code pidfd_send_signal(pidfd, signal, NULL, flags)} (Linux 5.1): to the process, or with {@code group}
     * to its whole process group ({@code PIDFD_SIGNAL_PROCESS_GROUP}, Linux 6.9; EINVAL before).
     *
     * @return false when the process has exited (ESRCH)
     */
    boolean pidfdSignal(int pidfd, int signal, boolean group) throws ErrnoException;

    /**
     * {@code prctl(PR_SET_DUMPABLE)}. A process that is not dumpable keeps its {@code /proc/<pid>/}
     * {@code environ}, {@code mem}, {@code root}, {@code cwd} and {@code fd} (and ptrace) from every other
     * process without CAP_SYS_PTRACE, those of its own UID included.
     */
    void dumpable(boolean dumpable) throws ErrnoException;

    /** {@code prctl(PR_GET_DUMPABLE)}: whether this process is dumpable now. */
    boolean dumpable() throws ErrnoException;

    /** {@code madvise(address, length, advice)}: a hint about this process's pages in the range; nothing is lost. */
    void advise(long address, long length, Advice advice) throws ErrnoException;

    /** What {@link #advise} tells the kernel of a range. */
    enum Advice {
        /**
         * {@code MADV_RANDOM}: a fault in a file's range reads the one page (no read-around); together with
         * {@code MADV_PAGEOUT}, the kernel then maps no page around it either, having none of the file in its cache.
         * Not for code: an executable mapping is read ahead whatever the advice.
         */
        RANDOM(1),
        /**
         * {@code MADV_PAGEOUT} (Linux 5.4): the pages may go; a file's pages mapped by no other process are reclaimed,
         * and read back from the file when touched again.
         */
        PAGEOUT(21);

        public final long value;

        Advice(long value) {
            this.value = value;
        }
    }

    /** {@code umask(mask)}: sets the process's file mode creation mask, returns the one before (it cannot fail). */
    int umask(int mask);

    /**
     * {@code fcntl(F_GETLK)}: which record lock of another process would stop this one from taking
     * a write lock on {@code [start, start + length)}. Asks the kernel; takes nothing.
     */
    RecordLock conflictingRecordLock(int fd, long start, long length) throws ErrnoException;

    /**
     * A Unix stream socket listening at {@code path} ({@code socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC)},
     * {@code bind}, {@code listen}): the name must not exist yet.
     */
    int listenUnix(String path, int backlog) throws ErrnoException;

    /** {@code accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)}; -1 when nobody is waiting (EAGAIN). */
    int accept(int listener) throws ErrnoException;

    /** {@code getsockopt(SO_PEERCRED)}: who is at the other end of a connected Unix socket, as of its connect. */
    Peer peer(int socket) throws ErrnoException;

    /** The process at the other end of a Unix socket: its pid (in this PID namespace), UID and GID. */
    record Peer(long pid, int uid, int gid) {
    }

    /**
     * {@code recvmsg(MSG_DONTWAIT | MSG_CMSG_CLOEXEC)} of at most {@code max} bytes and the descriptors passed with
     * them (SCM_RIGHTS, at most four; more are closed); null when nothing is waiting (EAGAIN), no bytes at the end.
     */
    Received receive(int socket, int max) throws ErrnoException;

    /** Bytes and the descriptors that came with them, now this process's own. */
    record Received(byte[] bytes, int[] fds) {
    }

    /**
     * {@code sendmsg(MSG_DONTWAIT | MSG_NOSIGNAL)} of {@code bytes}, with descriptor {@code passFd} (SCM_RIGHTS) when
     * it is not negative: how many bytes went, -1 when the peer's buffer is full (EAGAIN).
     */
    long send(int socket, byte[] bytes, int passFd) throws ErrnoException;

    /** A POSIX record lock another process holds, as {@code F_GETLK} reports the first it finds. */
    enum RecordLock {
        NONE, READ, WRITE
    }

    /** A libc call that failed, with the errno it left behind. */
    final class ErrnoException extends IOException {
        private final int errno;
        private final String description;

        public ErrnoException(String call, int errno, String description) {
            super(call + ": " + description + " (errno " + errno + ")");
            this.errno = errno;
            this.description = description;
        }

        public int errno() {
            return errno;
        }

        /** The C library's words for the errno ({@code strerror}), as Python's {@code OSError} has them too. */
        public String description() {
            return description;
        }
    }
}
