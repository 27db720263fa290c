package dev.warden.lock;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * libc through the FFM API: the only class in warden that touches {@code java.lang.foreign}.
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
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG;
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

    /** Sockets: the same numbers on x86_64 and asm-generic. */
    private static final int AF_UNIX = 1;
    private static final int SOCK_STREAM = 1;
    private static final int SOCK_NONBLOCK = 04000;
    private static final int SOCK_CLOEXEC = 02000000;
    private static final int SOL_SOCKET = 1;
    private static final int SO_PEERCRED = 17;
    private static final int SCM_RIGHTS = 1;
    private static final int MSG_DONTWAIT = 0x40;
    private static final int MSG_NOSIGNAL = 0x4000;
    private static final int MSG_CMSG_CLOEXEC = 0x40000000;
    /** struct sockaddr_un: sa_family_t, then a path of at most 107 bytes and its NUL. */
    private static final int SUN_PATH = 108;
    /** The most descriptors one receive takes; more are closed at once. */
    private static final int MAX_FDS = 4;
    /** struct msghdr on 64-bit Linux, and the cmsghdr in its control buffer. */
    private static final StructLayout MSGHDR = MemoryLayout.structLayout(ValueLayout.ADDRESS.withName("msg_name"),
            INT.withName("msg_namelen"), MemoryLayout.paddingLayout(4), ValueLayout.ADDRESS.withName("msg_iov"),
            LONG.withName("msg_iovlen"), ValueLayout.ADDRESS.withName("msg_control"), LONG.withName("msg_controllen"),
            INT.withName("msg_flags"), MemoryLayout.paddingLayout(4));
    private static final long MSG_IOV = 16;
    private static final long MSG_IOVLEN = 24;
    private static final long MSG_CONTROL = 32;
    private static final long MSG_CONTROLLEN = 40;
    /** cmsghdr: size_t cmsg_len, int cmsg_level, int cmsg_type, then the data (CMSG_LEN(n) = 16 + n). */
    private static final long CMSG_HEADER = 16;

    private final StructLayout callState = Linker.Option.captureStateLayout();
    private final VarHandle errnoHandle = callState.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private final MethodHandle openat;
    private final MethodHandle flock;
    private final MethodHandle close;
    private final MethodHandle fstat;
    private final MethodHandle fstatat;
    private final MethodHandle read;
    private final MethodHandle write;
    private final MethodHandle unlinkat;
    private final MethodHandle mkdirat;
    private final MethodHandle renameat;
    private final MethodHandle strerror;
    private final MethodHandle umask;
    private final MethodHandle kill;
    private final MethodHandle fcntl;
    private final MethodHandle syscall;
    private final MethodHandle socket;
    private final MethodHandle bind;
    private final MethodHandle listen;
    private final MethodHandle accept4;
    private final MethodHandle getsockopt;
    private final MethodHandle recvmsg;
    private final MethodHandle sendmsg;

    /**
     * Every downcall warden makes. A native image links only the shapes registered at build time,
     * so each one is also listed in META-INF/native-image/dev.warden/warden/reachability-metadata.json
     * (NativeImageMetadataTest keeps the two in step).
     */
    static final List<Downcall> DOWNCALLS = List.of(
            new Downcall("openat", FunctionDescriptor.of(INT, INT, ValueLayout.ADDRESS, INT, INT), true, 3),
            new Downcall("flock", FunctionDescriptor.of(INT, INT, INT), true, -1),
            new Downcall("close", FunctionDescriptor.of(INT, INT), false, -1),
            new Downcall("fstat", FunctionDescriptor.of(INT, INT, ValueLayout.ADDRESS), true, -1),
            new Downcall("fstatat", FunctionDescriptor.of(INT, INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS, INT), true, -1),
            new Downcall("read", FunctionDescriptor.of(LONG, INT, ValueLayout.ADDRESS, LONG), true, -1),
            new Downcall("write", FunctionDescriptor.of(LONG, INT, ValueLayout.ADDRESS, LONG), true, -1),
            new Downcall("unlinkat", FunctionDescriptor.of(INT, INT, ValueLayout.ADDRESS, INT), true, -1),
            new Downcall("mkdirat", FunctionDescriptor.of(INT, INT, ValueLayout.ADDRESS, INT), true, -1),
            new Downcall("renameat", FunctionDescriptor.of(INT, INT, ValueLayout.ADDRESS, INT, ValueLayout.ADDRESS), true, -1),
            new Downcall("kill", FunctionDescriptor.of(INT, INT, INT), true, -1),
            new Downcall("fcntl", FunctionDescriptor.of(INT, INT, INT, ValueLayout.ADDRESS), true, 2),
            // glibc wraps pidfd_open only from 2.36 on: the raw syscall works with any libc.
            new Downcall("syscall", FunctionDescriptor.of(LONG, LONG, LONG, LONG, LONG, LONG), true, 1),
            new Downcall("socket", FunctionDescriptor.of(INT, INT, INT, INT), true, -1),
            new Downcall("bind", FunctionDescriptor.of(INT, INT, ValueLayout.ADDRESS, INT), true, -1),
            new Downcall("listen", FunctionDescriptor.of(INT, INT, INT), true, -1),
            new Downcall("accept4", FunctionDescriptor.of(INT, INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS, INT), true, -1),
            new Downcall("getsockopt", FunctionDescriptor.of(INT, INT, INT, INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS),
                    true, -1),
            new Downcall("recvmsg", FunctionDescriptor.of(LONG, INT, ValueLayout.ADDRESS, INT), true, -1),
            new Downcall("sendmsg", FunctionDescriptor.of(LONG, INT, ValueLayout.ADDRESS, INT), true, -1),
            new Downcall("strerror", FunctionDescriptor.of(ValueLayout.ADDRESS, INT), false, -1),
            new Downcall("umask", FunctionDescriptor.of(INT, INT), false, -1));

    /** A libc function's shape, and whether errno is captured right after the call. */
    record Downcall(String symbol, FunctionDescriptor descriptor, boolean capturesErrno, int firstVariadicArg) {

        Linker.Option[] options() {
            List<Linker.Option> options = new ArrayList<>();
            if (capturesErrno) {
                options.add(Linker.Option.captureCallState("errno"));
            }
            if (firstVariadicArg >= 0) {
                options.add(Linker.Option.firstVariadicArg(firstVariadicArg));
            }
            return options.toArray(Linker.Option[]::new);
        }
    }

    /** One call into libc, with the arena it may allocate in and the segment errno is captured into. */
    @FunctionalInterface
    private interface Call {
        long invoke(Arena arena, MemorySegment state) throws Throwable;
    }

    /** The process's one instance: its downcalls are linked once and it holds no state of its own. */
    public static Posix shared() {
        return Shared.INSTANCE;
    }

    private static final class Shared {
        static final NativePosix INSTANCE = new NativePosix();
    }

    public NativePosix() {
        Linker linker = Linker.nativeLinker();
        SymbolLookup libc = linker.defaultLookup();
        Map<String, MethodHandle> linked = new HashMap<>();
        for (Downcall call : DOWNCALLS) {
            linked.put(call.symbol(), linker.downcallHandle(find(libc, call.symbol()), call.descriptor(), call.options()));
        }
        openat = linked.get("openat");
        flock = linked.get("flock");
        close = linked.get("close");
        fstat = linked.get("fstat");
        fstatat = linked.get("fstatat");
        read = linked.get("read");
        write = linked.get("write");
        unlinkat = linked.get("unlinkat");
        mkdirat = linked.get("mkdirat");
        renameat = linked.get("renameat");
        kill = linked.get("kill");
        strerror = linked.get("strerror");
        umask = linked.get("umask");
        fcntl = linked.get("fcntl");
        syscall = linked.get("syscall");
        socket = linked.get("socket");
        bind = linked.get("bind");
        listen = linked.get("listen");
        accept4 = linked.get("accept4");
        getsockopt = linked.get("getsockopt");
        recvmsg = linked.get("recvmsg");
        sendmsg = linked.get("sendmsg");
    }

    private static MemorySegment find(SymbolLookup lookup, String name) {
        return lookup.find(name).orElseThrow(() -> new UnsatisfiedLinkError(
                "libc has no " + name + "(); warden needs glibc 2.33 or newer (or musl) on Linux"));
    }

    /** Runs {@code call}; a negative result is a failure named {@code what}, with errno's description. */
    private long invoke(String what, Call call) throws ErrnoException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(callState);
            long rc = call.invoke(arena, state);
            if (rc < 0) {
                throw failure(what, state);
            }
            return rc;
        } catch (ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(what + " downcall failed", t);
        }
    }

    @Override
    public int openAt(int dirFd, String name, Open how) throws ErrnoException {
        int flags = O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | switch (how) {
            case READ -> O_RDONLY;
            case READ_WRITE_CREATE -> O_RDWR | O_CREAT;
            case CREATE_NEW -> O_WRONLY | O_CREAT | O_EXCL;
            case DIRECTORY -> O_RDONLY | O_DIRECTORY;
        };
        return (int) invoke("open(" + name + ")",
                (arena, state) -> (int) openat.invokeExact(state, dirFd, arena.allocateFrom(name), flags, NEW_FILE_MODE));
    }

    @Override
    public void lockExclusive(int fd, boolean wait) throws ErrnoException {
        int op = wait ? LOCK_EX : LOCK_EX | LOCK_NB;
        while (true) {
            try {
                invoke("flock", (arena, state) -> (int) flock.invokeExact(state, fd, op));
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
        invoke("flock(LOCK_UN)", (arena, state) -> (int) flock.invokeExact(state, fd, LOCK_UN));
    }

    @Override
    public void dumpable(boolean dumpable) throws ErrnoException {
        invoke("prctl(PR_SET_DUMPABLE)",
                (arena, state) -> (long) syscall.invokeExact(state, SYS_PRCTL, PR_SET_DUMPABLE, dumpable ? 1L : 0L, 0L, 0L));
    }

    @Override
    public boolean dumpable() throws ErrnoException {
        return invoke("prctl(PR_GET_DUMPABLE)",
                (arena, state) -> (long) syscall.invokeExact(state, SYS_PRCTL, PR_GET_DUMPABLE, 0L, 0L, 0L)) != 0;
    }

    @Override
    public void advise(long address, long length, Advice advice) throws ErrnoException {
        invoke("madvise(MADV_" + advice + ")",
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
        try {
            int ignored = (int) close.invokeExact(fd);
        } catch (Throwable t) {
            throw new IllegalStateException("close downcall failed", t);
        }
    }

    @Override
    public FileStat fstat(int fd) throws ErrnoException {
        FileStat[] result = new FileStat[1];
        invoke("fstat", (arena, state) -> {
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
        invoke("stat(" + name + ")", (arena, state) -> {
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
        invoke("read", (arena, state) -> {
            MemorySegment buf = arena.allocate(Math.max(1, max));
            long total = 0;
            while (total < max) {
                long n = (long) read.invokeExact(state, fd, buf.asSlice(total), (long) max - total);
                if (n < 0 && errno(state) == Errno.EINTR) {
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
        invoke("write", (arena, state) -> {
            MemorySegment buf = arena.allocateFrom(ValueLayout.JAVA_BYTE, bytes);
            long total = 0;
            while (total < bytes.length) {
                long n = (long) write.invokeExact(state, fd, buf.asSlice(total), (long) bytes.length - total);
                if (n < 0 && errno(state) == Errno.EINTR) {
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
            invoke("unlink(" + name + ")", (arena, state) -> (int) unlinkat.invokeExact(state, dirFd, arena.allocateFrom(name), 0));
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
        invoke("mkdir(" + name + ")", (arena, state) -> (int) mkdirat.invokeExact(state, dirFd, arena.allocateFrom(name), NEW_DIR_MODE));
    }

    @Override
    public void renameAt(int dirFd, String from, String to) throws ErrnoException {
        invoke("rename(" + from + ", " + to + ")", (arena, state) ->
                (int) renameat.invokeExact(state, dirFd, arena.allocateFrom(from), dirFd, arena.allocateFrom(to)));
    }

    @Override
    public RecordLock conflictingRecordLock(int fd, long start, long length) throws ErrnoException {
        short[] type = new short[1];
        invoke("fcntl(F_GETLK)", (arena, state) -> {
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
            invoke("kill(" + pid + ", " + signal + ")", (arena, state) -> (int) kill.invokeExact(state, Math.toIntExact(pid), signal));
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
        return (int) invoke("pidfd_open(" + pid + ")",
                (arena, state) -> (long) syscall.invokeExact(state, SYS_PIDFD_OPEN, pid, 0L, 0L, 0L));
    }

    @Override
    public boolean pidfdSignal(int pidfd, int signal, boolean group) throws ErrnoException {
        long flags = group ? PIDFD_SIGNAL_PROCESS_GROUP : 0L;
        try {
            invoke("pidfd_send_signal(" + signal + ")", (arena, state) -> (long) syscall.invokeExact(state,
                    SYS_PIDFD_SEND_SIGNAL, (long) pidfd, (long) signal, 0L, flags));
            return true;
        } catch (ErrnoException e) {
            if (e.errno() == Errno.ESRCH) {
                return false;
            }
            throw e;
        }
    }

    @Override
    public int listenUnix(String path, int backlog) throws ErrnoException {
        byte[] name = path.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        if (name.length >= SUN_PATH) {
            throw new ErrnoException("bind(" + path + ")", Errno.ENAMETOOLONG, "a Unix socket's path must be shorter than "
                    + SUN_PATH + " bytes");
        }
        int fd = (int) invoke("socket(AF_UNIX)", (arena, state) -> (int) socket.invokeExact(state, AF_UNIX,
                SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        try {
            invoke("bind(" + path + ")", (arena, state) -> {
                MemorySegment address = arena.allocate(2 + SUN_PATH, 2);
                address.set(ValueLayout.JAVA_SHORT, 0, (short) AF_UNIX);
                MemorySegment.copy(name, 0, address, ValueLayout.JAVA_BYTE, 2, name.length);
                return (int) bind.invokeExact(state, fd, address, 2 + name.length + 1);
            });
            invoke("listen(" + path + ")", (arena, state) -> (int) listen.invokeExact(state, fd, backlog));
            return fd;
        } catch (ErrnoException e) {
            close(fd);
            throw e;
        }
    }

    @Override
    public int accept(int listener) throws ErrnoException {
        try {
            return (int) invoke("accept", (arena, state) -> (int) accept4.invokeExact(state, listener, MemorySegment.NULL,
                    MemorySegment.NULL, SOCK_NONBLOCK | SOCK_CLOEXEC));
        } catch (ErrnoException e) {
            if (e.errno() == Errno.EAGAIN || e.errno() == Errno.EINTR || e.errno() == Errno.ECONNABORTED) {
                return -1;
            }
            throw e;
        }
    }

    @Override
    public Peer peer(int socketFd) throws ErrnoException {
        Peer[] result = new Peer[1];
        invoke("getsockopt(SO_PEERCRED)", (arena, state) -> {
            MemorySegment credentials = arena.allocate(12, 4);
            MemorySegment length = arena.allocateFrom(INT, 12);
            int rc = (int) getsockopt.invokeExact(state, socketFd, SOL_SOCKET, SO_PEERCRED, credentials, length);
            result[0] = new Peer(credentials.get(INT, 0), credentials.get(INT, 4), credentials.get(INT, 8));
            return rc;
        });
        return result[0];
    }

    @Override
    public Received receive(int socketFd, int max) throws ErrnoException {
        Received[] result = new Received[1];
        try {
            invoke("recvmsg", (arena, state) -> {
                MemorySegment data = arena.allocate(Math.max(1, max));
                MemorySegment iov = arena.allocate(16, 8);
                iov.set(ValueLayout.ADDRESS, 0, data);
                iov.set(LONG, 8, max);
                long controlLength = CMSG_HEADER + 4L * MAX_FDS;
                MemorySegment control = arena.allocate(controlLength, 8);
                MemorySegment message = arena.allocate(MSGHDR);
                message.set(ValueLayout.ADDRESS, MSG_IOV, iov);
                message.set(LONG, MSG_IOVLEN, 1L);
                message.set(ValueLayout.ADDRESS, MSG_CONTROL, control);
                message.set(LONG, MSG_CONTROLLEN, controlLength);
                long n;
                do {
                    n = (long) recvmsg.invokeExact(state, socketFd, message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
                } while (n < 0 && errno(state) == Errno.EINTR);
                if (n < 0) {
                    return n;
                }
                int[] fds = new int[0];
                long received = message.get(LONG, MSG_CONTROLLEN);
                if (received >= CMSG_HEADER && control.get(INT, 8) == SOL_SOCKET && control.get(INT, 12) == SCM_RIGHTS) {
                    int count = (int) ((Math.min(control.get(LONG, 0), received) - CMSG_HEADER) / 4);
                    fds = new int[count];
                    for (int i = 0; i < count; i++) {
                        fds[i] = control.get(INT, CMSG_HEADER + 4L * i);
                    }
                }
                result[0] = new Received(data.asSlice(0, n).toArray(ValueLayout.JAVA_BYTE), fds);
                return n;
            });
        } catch (ErrnoException e) {
            if (e.errno() == Errno.EAGAIN) {
                return null;
            }
            throw e;
        }
        return result[0];
    }

    @Override
    public long send(int socketFd, byte[] bytes, int passFd) throws ErrnoException {
        try {
            return invoke("sendmsg", (arena, state) -> {
                MemorySegment data = arena.allocateFrom(ValueLayout.JAVA_BYTE, bytes);
                MemorySegment iov = arena.allocate(16, 8);
                iov.set(ValueLayout.ADDRESS, 0, data);
                iov.set(LONG, 8, bytes.length);
                MemorySegment message = arena.allocate(MSGHDR);
                message.set(ValueLayout.ADDRESS, MSG_IOV, iov);
                message.set(LONG, MSG_IOVLEN, 1L);
                if (passFd >= 0) {
                    MemorySegment control = arena.allocate(CMSG_HEADER + 8, 8);
                    control.set(LONG, 0, CMSG_HEADER + 4);
                    control.set(INT, 8, SOL_SOCKET);
                    control.set(INT, 12, SCM_RIGHTS);
                    control.set(INT, CMSG_HEADER, passFd);
                    message.set(ValueLayout.ADDRESS, MSG_CONTROL, control);
                    message.set(LONG, MSG_CONTROLLEN, CMSG_HEADER + 8);
                }
                long n;
                do {
                    n = (long) sendmsg.invokeExact(state, socketFd, message, MSG_DONTWAIT | MSG_NOSIGNAL);
                } while (n < 0 && errno(state) == Errno.EINTR);
                return n;
            });
        } catch (ErrnoException e) {
            if (e.errno() == Errno.EAGAIN) {
                return -1;
            }
            throw e;
        }
    }

    private static FileStat statOf(MemorySegment buf) {
        return new FileStat(new FileId(buf.get(LONG, ST_DEV_OFFSET), buf.get(LONG, ST_INO_OFFSET)),
                buf.get(INT, ST_MODE_OFFSET), buf.get(LONG, ST_SIZE_OFFSET), buf.get(INT, ST_UID_OFFSET));
    }

    private int errno(MemorySegment state) {
        return (int) errnoHandle.get(state, 0L);
    }

    private ErrnoException failure(String call, MemorySegment state) {
        int errno = errno(state);
        return new ErrnoException(call, errno, describe(errno));
    }

    private String describe(int errno) {
        try {
            MemorySegment text = (MemorySegment) strerror.invokeExact(errno);
            return text.reinterpret(1024).getString(0);
        } catch (Throwable t) {
            return "errno " + errno;
        }
    }
}
