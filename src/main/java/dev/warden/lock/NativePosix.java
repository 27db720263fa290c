package dev.warden.lock;

import static dev.warden.lock.Libc.INT;
import static dev.warden.lock.Libc.LONG;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * {@link Posix} on libc through the FFM API: with {@link Libc}, which links and calls it, and {@link NativeSockets},
 * the switch's sockets, the only classes in warden that touch {@code java.lang.foreign}.
 *
 * <p>{@code FileChannel.lock()} takes POSIX record locks, which Linux keeps apart from the
 * {@code flock(2)} locks lilbee's filelock takes, so warden calls {@code flock} itself. And
 * {@code java.nio.file} cannot open a name relative to a directory descriptor, which is what keeps
 * a neighbour's swapped-in link from redirecting warden, so warden calls {@code openat} itself too.
 */
public final class NativePosix implements Posix {

    private static final boolean X86 = "amd64".equals(System.getProperty("os.arch"))
            || "x86_64".equals(System.getProperty("os.arch"));
    private static final int O_RDONLY = 0;
    private static final int O_WRONLY = 01;
    private static final int O_RDWR = 02;
    private static final int O_CREAT = 0100;
    private static final int O_EXCL = 0200;
    private static final int O_NONBLOCK = 04000;
    private static final int O_CLOEXEC = 02000000;
    // asm-generic (aarch64, riscv64) and x86 disagree on these two.
    private static final int O_NOFOLLOW = X86 ? 0400000 : 0100000;
    private static final int O_DIRECTORY = X86 ? 0200000 : 040000;
    private static final int AT_SYMLINK_NOFOLLOW = 0x100;
    /** Syscall numbers from Linux 5.1 on are the same on every architecture (asm-generic's unified table). */
    private static final long SYS_PIDFD_SEND_SIGNAL = 424;
    private static final long SYS_PIDFD_OPEN = 434;
    private static final long PIDFD_SIGNAL_PROCESS_GROUP = 1L << 2;
    /** prctl is older than the unified table: x86_64 and asm-generic number it apart. */
    private static final long SYS_PRCTL = X86 ? 157 : 167;
    private static final long PR_GET_DUMPABLE = 3;
    private static final long PR_SET_DUMPABLE = 4;
    /** madvise is older than the unified table too. */
    private static final long SYS_MADVISE = X86 ? 28 : 233;
    private static final int LOCK_EX = 2;
    private static final int LOCK_NB = 4;
    private static final int LOCK_UN = 8;
    /** Mode for a new file, as filelock creates its locks: anyone may lock it, the umask decides. */
    private static final int NEW_FILE_MODE = 0666;
    private static final int NEW_DIR_MODE = 0777;
    /** struct stat is 144 bytes on x86_64 and 128 on aarch64; st_dev, st_ino and st_size sit alike, st_mode and st_uid not. */
    private static final long STAT_SIZE = 256;
    private static final long ST_DEV_OFFSET = 0;
    private static final long ST_INO_OFFSET = 8;
    private static final long ST_MODE_OFFSET = X86 ? 24 : 16;
    private static final long ST_UID_OFFSET = X86 ? 28 : 24;
    private static final long ST_SIZE_OFFSET = 48;
    /** fcntl's F_GETLK, and struct flock's types (the same on x86_64 and aarch64). */
    private static final int F_GETLK = 5;
    private static final short F_RDLCK = 0;
    private static final short F_WRLCK = 1;
    private static final short SEEK_SET = 0;
    /** struct flock on 64-bit Linux: short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid. */
    private static final StructLayout FLOCK = MemoryLayout.structLayout(ValueLayout.JAVA_SHORT.withName("l_type"),
            ValueLayout.JAVA_SHORT.withName("l_whence"), MemoryLayout.paddingLayout(4),
            LONG.withName("l_start"), LONG.withName("l_len"),
            INT.withName("l_pid"), MemoryLayout.paddingLayout(4));
    private static final long L_TYPE = 0;
    private static final long L_WHENCE = 2;
    private static final long L_START = 8;
    private static final long L_LEN = 16;

    private final Libc libc;
    private final NativeSockets sockets;
    private final MethodHandle openat;
    private final MethodHandle flock;
    private final MethodHandle fstat;
    private final MethodHandle fstatat;
    private final MethodHandle read;
    private final MethodHandle write;
    private final MethodHandle unlinkat;
    private final MethodHandle mkdirat;
    private final MethodHandle renameat;
    private final MethodHandle fchmodat;
    private final MethodHandle umask;
    private final MethodHandle kill;
    private final MethodHandle fcntl;
    private final MethodHandle syscall;

    /** The process's one instance: its downcalls are linked once and it holds no state of its own. */
    public static Posix shared() {
        return Shared.INSTANCE;
    }

    private static final class Shared {
        static final NativePosix INSTANCE = new NativePosix();
    }

    public NativePosix() {
        libc = new Libc();
        sockets = new NativeSockets(libc);
        openat = libc.handle("openat");
        flock = libc.handle("flock");
        fstat = libc.handle("fstat");
        fstatat = libc.handle("fstatat");
        read = libc.handle("read");
        write = libc.handle("write");
        unlinkat = libc.handle("unlinkat");
        mkdirat = libc.handle("mkdirat");
        renameat = libc.handle("renameat");
        fchmodat = libc.handle("fchmodat");
        kill = libc.handle("kill");
        umask = libc.handle("umask");
        fcntl = libc.handle("fcntl");
        syscall = libc.handle("syscall");
    }

    @Override
    public int listenUnix(String path, int backlog) throws ErrnoException {
        return sockets.listenUnix(path, backlog);
    }

    @Override
    public int accept(int listener) throws ErrnoException {
        return sockets.accept(listener);
    }

    @Override
    public Peer peer(int socketFd) throws ErrnoException {
        return sockets.peer(socketFd);
    }

    @Override
    public Received receive(int socketFd, int max) throws ErrnoException {
        return sockets.receive(socketFd, max);
    }

    @Override
    public long send(int socketFd, byte[] bytes, int passFd) throws ErrnoException {
        return sockets.send(socketFd, bytes, passFd);
    }

    @Override
    public int openAt(int dirFd, String name, Open how) throws ErrnoException {
        int flags = O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | switch (how) {
            case READ -> O_RDONLY;
            case READ_WRITE_CREATE -> O_RDWR | O_CREAT;
            case CREATE_NEW -> O_WRONLY | O_CREAT | O_EXCL;
            case DIRECTORY -> O_RDONLY | O_DIRECTORY;
        };
        return (int) libc.invoke("open(" + name + ")",
                (arena, state) -> (int) openat.invokeExact(state, dirFd, arena.allocateFrom(name), flags, NEW_FILE_MODE));
    }

    @Override
    public void lockExclusive(int fd, boolean wait) throws ErrnoException {
        int op = wait ? LOCK_EX : LOCK_EX | LOCK_NB;
        while (true) {
            try {
                libc.invoke("flock", (arena, state) -> (int) flock.invokeExact(state, fd, op));
                return;
            } catch (ErrnoException e) {
                // A signal delivered to a blocked flock is no answer; ask again.
                if (e.errno() != Errno.EINTR) {
                    throw e;
                }
            }
        }
    }

    @Override
    public void unlock(int fd) throws ErrnoException {
        libc.invoke("flock(LOCK_UN)", (arena, state) -> (int) flock.invokeExact(state, fd, LOCK_UN));
    }

    @Override
    public void dumpable(boolean dumpable) throws ErrnoException {
        libc.invoke("prctl(PR_SET_DUMPABLE)",
                (arena, state) -> (long) syscall.invokeExact(state, SYS_PRCTL, PR_SET_DUMPABLE, dumpable ? 1L : 0L, 0L, 0L));
    }

    @Override
    public boolean dumpable() throws ErrnoException {
        return libc.invoke("prctl(PR_GET_DUMPABLE)",
                (arena, state) -> (long) syscall.invokeExact(state, SYS_PRCTL, PR_GET_DUMPABLE, 0L, 0L, 0L)) != 0;
    }

    @Override
    public void advise(long address, long length, Advice advice) throws ErrnoException {
        libc.invoke("madvise(MADV_" + advice + ")",
                (arena, state) -> (long) syscall.invokeExact(state, SYS_MADVISE, address, length, advice.value, 0L));
    }

    @Override
    public int umask(int mask) {
        try {
            return (int) umask.invokeExact(mask);
        } catch (Throwable t) {
            throw new IllegalStateException("umask downcall failed", t);
        }
    }

    @Override
    public void close(int fd) {
        libc.close(fd);
    }

    @Override
    public FileStat fstat(int fd) throws ErrnoException {
        FileStat[] result = new FileStat[1];
        libc.invoke("fstat", (arena, state) -> {
            MemorySegment buf = arena.allocate(STAT_SIZE, 8);
            int rc = (int) fstat.invokeExact(state, fd, buf);
            result[0] = rc == 0 ? statOf(buf) : null;
            return rc;
        });
        return result[0];
    }

    @Override
    public FileStat statAt(int dirFd, String name) throws ErrnoException {
        FileStat[] result = new FileStat[1];
        libc.invoke("stat(" + name + ")", (arena, state) -> {
            MemorySegment buf = arena.allocate(STAT_SIZE, 8);
            int rc = (int) fstatat.invokeExact(state, dirFd, arena.allocateFrom(name), buf, AT_SYMLINK_NOFOLLOW);
            result[0] = rc == 0 ? statOf(buf) : null;
            return rc;
        });
        return result[0];
    }

    @Override
    public byte[] read(int fd, int max) throws ErrnoException {
        byte[][] result = new byte[1][];
        libc.invoke("read", (arena, state) -> {
            MemorySegment buf = arena.allocate(Math.max(1, max));
            long total = 0;
            while (total < max) {
                long n = (long) read.invokeExact(state, fd, buf.asSlice(total), (long) max - total);
                if (n < 0 && libc.errno(state) == Errno.EINTR) {
                    continue;
                }
                if (n <= 0) {
                    if (n < 0) {
                        return n;
                    }
                    break;
                }
                total += n;
            }
            result[0] = buf.asSlice(0, total).toArray(ValueLayout.JAVA_BYTE);
            return total;
        });
        return result[0];
    }

    @Override
    public void write(int fd, byte[] bytes) throws ErrnoException {
        libc.invoke("write", (arena, state) -> {
            MemorySegment buf = arena.allocateFrom(ValueLayout.JAVA_BYTE, bytes);
            long total = 0;
            while (total < bytes.length) {
                long n = (long) write.invokeExact(state, fd, buf.asSlice(total), (long) bytes.length - total);
                if (n < 0 && libc.errno(state) == Errno.EINTR) {
                    continue;
                }
                if (n < 0) {
                    return n;
                }
                total += n;
            }
            return total;
        });
    }

    @Override
    public boolean unlinkAt(int dirFd, String name) throws ErrnoException {
        try {
            libc.invoke("unlink(" + name + ")", (arena, state) -> (int) unlinkat.invokeExact(state, dirFd, arena.allocateFrom(name), 0));
            return true;
        } catch (ErrnoException e) {
            if (e.errno() == Errno.ENOENT) {
                return false;
            }
            throw e;
        }
    }

    @Override
    public void mkdirAt(int dirFd, String name) throws ErrnoException {
        libc.invoke("mkdir(" + name + ")", (arena, state) -> (int) mkdirat.invokeExact(state, dirFd, arena.allocateFrom(name), NEW_DIR_MODE));
    }

    @Override
    public void renameAt(int dirFd, String from, String to) throws ErrnoException {
        libc.invoke("rename(" + from + ", " + to + ")", (arena, state) ->
                (int) renameat.invokeExact(state, dirFd, arena.allocateFrom(from), dirFd, arena.allocateFrom(to)));
    }

    @Override
    public void chmodAt(int dirFd, String name, int mode) throws ErrnoException {
        try {
            chmodAt(dirFd, name, mode, AT_SYMLINK_NOFOLLOW);
        } catch (ErrnoException e) {
            // A glibc of 2.39 on asks the kernel's fchmodat2 for the flag, which a container runtime's older seccomp
            // profile refuses (EPERM) and an older kernel lacks (ENOSYS); a glibc before 2.32 refuses the flag for every
            // file (EOPNOTSUPP): the name is checked not to be a link, then changed without the flag. A link swapped in
            // between the two is this fallback's window alone.
            if (e.errno() != Errno.EPERM && e.errno() != Errno.ENOSYS && e.errno() != Errno.EOPNOTSUPP) {
                throw e;
            }
            if (statAt(dirFd, name).isSymbolicLink()) {
                throw new ErrnoException("chmod(" + name + ")", Errno.ELOOP, "a link, not followed");
            }
            chmodAt(dirFd, name, mode, 0);
        }
    }

    private void chmodAt(int dirFd, String name, int mode, int flags) throws ErrnoException {
        libc.invoke("chmod(" + name + ")", (arena, state) ->
                (int) fchmodat.invokeExact(state, dirFd, arena.allocateFrom(name), mode, flags));
    }

    @Override
    public RecordLock conflictingRecordLock(int fd, long start, long length) throws ErrnoException {
        short[] type = new short[1];
        libc.invoke("fcntl(F_GETLK)", (arena, state) -> {
            MemorySegment query = arena.allocate(FLOCK);
            query.set(ValueLayout.JAVA_SHORT, L_TYPE, F_WRLCK);
            query.set(ValueLayout.JAVA_SHORT, L_WHENCE, SEEK_SET);
            query.set(LONG, L_START, start);
            query.set(LONG, L_LEN, length);
            int rc = (int) fcntl.invokeExact(state, fd, F_GETLK, query);
            type[0] = query.get(ValueLayout.JAVA_SHORT, L_TYPE);
            return rc;
        });
        return switch (type[0]) {
            case F_RDLCK -> RecordLock.READ;
            case F_WRLCK -> RecordLock.WRITE;
            default -> RecordLock.NONE;
        };
    }

    @Override
    public boolean kill(long pid, int signal) throws ErrnoException {
        try {
            libc.invoke("kill(" + pid + ", " + signal + ")", (arena, state) -> (int) kill.invokeExact(state, Math.toIntExact(pid), signal));
            return true;
        } catch (ErrnoException e) {
            if (e.errno() == Errno.ESRCH) {
                return false;
            }
            throw e;
        }
    }

    @Override
    public int pidfdOpen(long pid) throws ErrnoException {
        return (int) libc.invoke("pidfd_open(" + pid + ")",
                (arena, state) -> (long) syscall.invokeExact(state, SYS_PIDFD_OPEN, pid, 0L, 0L, 0L));
    }

    @Override
    public boolean pidfdSignal(int pidfd, int signal, boolean group) throws ErrnoException {
        long flags = group ? PIDFD_SIGNAL_PROCESS_GROUP : 0L;
        try {
            libc.invoke("pidfd_send_signal(" + signal + ")", (arena, state) -> (long) syscall.invokeExact(state,
                    SYS_PIDFD_SEND_SIGNAL, (long) pidfd, (long) signal, 0L, flags));
            return true;
        } catch (ErrnoException e) {
            if (e.errno() == Errno.ESRCH) {
                return false;
            }
            throw e;
        }
    }

    private static FileStat statOf(MemorySegment buf) {
        return new FileStat(new FileId(buf.get(LONG, ST_DEV_OFFSET), buf.get(LONG, ST_INO_OFFSET)),
                buf.get(INT, ST_MODE_OFFSET), buf.get(LONG, ST_SIZE_OFFSET), buf.get(INT, ST_UID_OFFSET));
    }


}
