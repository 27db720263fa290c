package dev.warden.lock;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.List;

/**
 * libc through the FFM API: the only class in warden that touches {@code java.lang.foreign}.
 *
 * <p>{@code FileChannel.lock()} takes POSIX record locks, which Linux keeps apart from the
 * {@code flock(2)} locks lilbee's filelock takes, so warden calls {@code flock} itself.
 */
public final class NativePosix implements Posix {

    private static final int O_RDWR = 02;
    private static final int O_CREAT = 0100;
    private static final int O_NONBLOCK = 04000;
    private static final int O_CLOEXEC = 02000000;
    // asm-generic (aarch64, riscv64) and x86 disagree on O_NOFOLLOW.
    private static final int O_NOFOLLOW = "amd64".equals(System.getProperty("os.arch"))
            || "x86_64".equals(System.getProperty("os.arch")) ? 0400000 : 0100000;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;
    private static final int LOCK_EX = 2;
    private static final int LOCK_NB = 4;
    /** Mode for a new lock file, as filelock creates it: anyone may lock it, the umask decides. */
    private static final int LOCK_FILE_MODE = 0666;
    /** struct stat is 144 bytes on x86_64 and 128 on aarch64; st_dev and st_ino lead on both. */
    private static final long STAT_SIZE = 256;
    private static final long ST_DEV_OFFSET = 0;
    private static final long ST_INO_OFFSET = 8;
    /** fcntl's F_GETLK, and struct flock's types (the same on x86_64 and aarch64). */
    private static final int F_GETLK = 5;
    private static final short F_RDLCK = 0;
    private static final short F_WRLCK = 1;
    private static final short SEEK_SET = 0;
    /** struct flock on 64-bit Linux: short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid. */
    private static final StructLayout FLOCK = java.lang.foreign.MemoryLayout.structLayout(ValueLayout.JAVA_SHORT.withName("l_type"),
            ValueLayout.JAVA_SHORT.withName("l_whence"), java.lang.foreign.MemoryLayout.paddingLayout(4),
            ValueLayout.JAVA_LONG.withName("l_start"), ValueLayout.JAVA_LONG.withName("l_len"),
            ValueLayout.JAVA_INT.withName("l_pid"), java.lang.foreign.MemoryLayout.paddingLayout(4));
    private static final long L_TYPE = 0;
    private static final long L_WHENCE = 2;
    private static final long L_START = 8;
    private static final long L_LEN = 16;

    private final StructLayout callState = Linker.Option.captureStateLayout();
    private final VarHandle errnoHandle =
            callState.varHandle(java.lang.foreign.MemoryLayout.PathElement.groupElement("errno"));
    private final MethodHandle open;
    private final MethodHandle flock;
    private final MethodHandle close;
    private final MethodHandle fstat;
    private final MethodHandle stat;
    private final MethodHandle strerror;
    private final MethodHandle kill;
    private final MethodHandle fcntl;

    /**
     * Every downcall warden makes. A native image links only the shapes registered at build time,
     * so each one is also listed in META-INF/native-image/dev.warden/warden/reachability-metadata.json
     * (NativeImageMetadataTest keeps the two in step).
     */
    static final List<Downcall> DOWNCALLS = List.of(
            new Downcall("open", FunctionDescriptor.of(INT, ValueLayout.ADDRESS, INT, INT), true, 2),
            new Downcall("flock", FunctionDescriptor.of(INT, INT, INT), true, -1),
            new Downcall("close", FunctionDescriptor.of(INT, INT), false, -1),
            new Downcall("fstat", FunctionDescriptor.of(INT, INT, ValueLayout.ADDRESS), true, -1),
            new Downcall("stat", FunctionDescriptor.of(INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS), true, -1),
            new Downcall("kill", FunctionDescriptor.of(INT, INT, INT), true, -1),
            new Downcall("fcntl", FunctionDescriptor.of(INT, INT, INT, ValueLayout.ADDRESS), true, 2),
            new Downcall("strerror", FunctionDescriptor.of(ValueLayout.ADDRESS, INT), false, -1));

    /** A libc function's shape, and whether errno is captured right after the call. */
    record Downcall(String symbol, FunctionDescriptor descriptor, boolean capturesErrno, int firstVariadicArg) {

        Linker.Option[] options() {
            List<Linker.Option> options = new java.util.ArrayList<>();
            if (capturesErrno) {
                options.add(Linker.Option.captureCallState("errno"));
            }
            if (firstVariadicArg >= 0) {
                options.add(Linker.Option.firstVariadicArg(firstVariadicArg));
            }
            return options.toArray(Linker.Option[]::new);
        }
    }

    public NativePosix() {
        Linker linker = Linker.nativeLinker();
        SymbolLookup libc = linker.defaultLookup();
        java.util.Map<String, MethodHandle> linked = new java.util.HashMap<>();
        for (Downcall call : DOWNCALLS) {
            linked.put(call.symbol(), linker.downcallHandle(find(libc, call.symbol()), call.descriptor(), call.options()));
        }
        open = linked.get("open");
        flock = linked.get("flock");
        close = linked.get("close");
        fstat = linked.get("fstat");
        stat = linked.get("stat");
        kill = linked.get("kill");
        strerror = linked.get("strerror");
        fcntl = linked.get("fcntl");
    }

    private static MemorySegment find(SymbolLookup lookup, String name) {
        return lookup.find(name).orElseThrow(() -> new UnsatisfiedLinkError(
                "libc has no " + name + "(); warden needs glibc 2.33 or newer (or musl) on Linux"));
    }

    @Override
    public int openLockFile(String path, boolean create) throws ErrnoException {
        return open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0));
    }

    @Override
    public int openExisting(String path) throws ErrnoException {
        return open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    }

    @Override
    public RecordLock conflictingRecordLock(int fd, long start, long length) throws ErrnoException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(callState);
            MemorySegment query = arena.allocate(FLOCK);
            query.set(ValueLayout.JAVA_SHORT, L_TYPE, F_WRLCK);
            query.set(ValueLayout.JAVA_SHORT, L_WHENCE, SEEK_SET);
            query.set(ValueLayout.JAVA_LONG, L_START, start);
            query.set(ValueLayout.JAVA_LONG, L_LEN, length);
            int rc = (int) fcntl.invokeExact(state, fd, F_GETLK, query);
            if (rc != 0) {
                throw failure("fcntl(F_GETLK)", state);
            }
            return switch (query.get(ValueLayout.JAVA_SHORT, L_TYPE)) {
                case F_RDLCK -> RecordLock.READ;
                case F_WRLCK -> RecordLock.WRITE;
                default -> RecordLock.NONE;
            };
        } catch (ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("fcntl downcall failed", t);
        }
    }

    private int open(String path, int flags) throws ErrnoException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(callState);
            int fd = (int) open.invokeExact(state, arena.allocateFrom(path), flags, LOCK_FILE_MODE);
            if (fd < 0) {
                throw failure("open(" + path + ")", state);
            }
            return fd;
        } catch (ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("open downcall failed", t);
        }
    }

    @Override
    public void lockExclusive(int fd, boolean wait) throws ErrnoException {
        int op = wait ? LOCK_EX : LOCK_EX | LOCK_NB;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(callState);
            while (true) {
                int rc = (int) flock.invokeExact(state, fd, op);
                if (rc == 0) {
                    return;
                }
                // A signal delivered to a blocked flock is no answer; ask again.
                if (errno(state) != Errno.EINTR) {
                    throw failure("flock", state);
                }
            }
        } catch (ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("flock downcall failed", t);
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
    public FileId fstat(int fd) throws ErrnoException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(callState);
            MemorySegment buf = arena.allocate(STAT_SIZE, 8);
            int rc = (int) fstat.invokeExact(state, fd, buf);
            if (rc != 0) {
                throw failure("fstat", state);
            }
            return idOf(buf);
        } catch (ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("fstat downcall failed", t);
        }
    }

    @Override
    public FileId stat(String path) throws ErrnoException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(callState);
            MemorySegment buf = arena.allocate(STAT_SIZE, 8);
            int rc = (int) stat.invokeExact(state, arena.allocateFrom(path), buf);
            if (rc != 0) {
                throw failure("stat(" + path + ")", state);
            }
            return idOf(buf);
        } catch (ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("stat downcall failed", t);
        }
    }

    @Override
    public boolean kill(long pid, int signal) throws ErrnoException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(callState);
            int rc = (int) kill.invokeExact(state, Math.toIntExact(pid), signal);
            if (rc == 0) {
                return true;
            }
            if (errno(state) == Errno.ESRCH) {
                return false;
            }
            throw failure("kill(" + pid + ", " + signal + ")", state);
        } catch (ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("kill downcall failed", t);
        }
    }

    private static FileId idOf(MemorySegment buf) {
        return new FileId(buf.get(ValueLayout.JAVA_LONG, ST_DEV_OFFSET), buf.get(ValueLayout.JAVA_LONG, ST_INO_OFFSET));
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
