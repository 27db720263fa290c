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

/**
 * libc through the FFM API: the only class in warden that touches {@code java.lang.foreign}.
 *
 * <p>{@code FileChannel.lock()} takes POSIX record locks, which Linux keeps apart from the
 * {@code flock(2)} locks lilbee's filelock takes, so warden calls {@code flock} itself.
 */
public final class NativePosix implements Posix {

    private static final int O_RDWR = 02;
    private static final int O_CREAT = 0100;
    private static final int O_CLOEXEC = 02000000;
    // asm-generic (aarch64, riscv64) and x86 disagree on O_NOFOLLOW.
    private static final int O_NOFOLLOW = "amd64".equals(System.getProperty("os.arch"))
            || "x86_64".equals(System.getProperty("os.arch")) ? 0400000 : 0100000;
    private static final int LOCK_EX = 2;
    private static final int LOCK_NB = 4;
    /** Mode for a new lock file, as filelock creates it: anyone may lock it, the umask decides. */
    private static final int LOCK_FILE_MODE = 0666;
    /** struct stat is 144 bytes on x86_64 and 128 on aarch64; st_dev and st_ino lead on both. */
    private static final long STAT_SIZE = 256;
    private static final long ST_DEV_OFFSET = 0;
    private static final long ST_INO_OFFSET = 8;

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

    public NativePosix() {
        Linker linker = Linker.nativeLinker();
        SymbolLookup libc = linker.defaultLookup();
        Linker.Option errno = Linker.Option.captureCallState("errno");
        ValueLayout.OfInt i = ValueLayout.JAVA_INT;
        open = linker.downcallHandle(find(libc, "open"),
                FunctionDescriptor.of(i, ValueLayout.ADDRESS, i, i), errno, Linker.Option.firstVariadicArg(2));
        flock = linker.downcallHandle(find(libc, "flock"), FunctionDescriptor.of(i, i, i), errno);
        close = linker.downcallHandle(find(libc, "close"), FunctionDescriptor.of(i, i));
        fstat = linker.downcallHandle(find(libc, "fstat"), FunctionDescriptor.of(i, i, ValueLayout.ADDRESS), errno);
        stat = linker.downcallHandle(find(libc, "stat"),
                FunctionDescriptor.of(i, ValueLayout.ADDRESS, ValueLayout.ADDRESS), errno);
        kill = linker.downcallHandle(find(libc, "kill"), FunctionDescriptor.of(i, i, i), errno);
        strerror = linker.downcallHandle(find(libc, "strerror"), FunctionDescriptor.of(ValueLayout.ADDRESS, i));
    }

    private static MemorySegment find(SymbolLookup lookup, String name) {
        return lookup.find(name).orElseThrow(() -> new UnsatisfiedLinkError(
                "libc has no " + name + "(); warden needs glibc 2.33 or newer (or musl) on Linux"));
    }

    @Override
    public int openLockFile(String path, boolean create) throws ErrnoException {
        int flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0);
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
