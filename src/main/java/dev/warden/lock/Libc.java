package dev.warden.lock;

import dev.warden.lock.Posix.ErrnoException;
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
 * libc's functions warden calls, linked once through the FFM API, and the one way they are called: errno captured
 * right after the call, and a negative result turned into an {@link Posix.ErrnoException} with errno's description.
 * {@link NativePosix} and {@link NativeSockets} make the calls.
 */
final class Libc {

    static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;
    static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG;

    private final StructLayout callState = Linker.Option.captureStateLayout();
    private final VarHandle errnoHandle = callState.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private final Map<String, MethodHandle> linked = new HashMap<>();
    private final MethodHandle strerror;
    private final MethodHandle close;

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
            new Downcall("fchmodat", FunctionDescriptor.of(INT, INT, ValueLayout.ADDRESS, INT, INT), true, -1),
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
    interface Call {
        long invoke(Arena arena, MemorySegment state) throws Throwable;
    }

    Libc() {
        Linker linker = Linker.nativeLinker();
        SymbolLookup libc = linker.defaultLookup();
        for (Downcall call : DOWNCALLS) {
            linked.put(call.symbol(), linker.downcallHandle(find(libc, call.symbol()), call.descriptor(), call.options()));
        }
        strerror = linked.get("strerror");
        close = linked.get("close");
    }

    /** The downcall of {@code symbol}, one of {@link #DOWNCALLS}. */
    MethodHandle handle(String symbol) {
        MethodHandle handle = linked.get(symbol);
        if (handle == null) {
            throw new IllegalArgumentException(symbol + " is not among the downcalls linked");
        }
        return handle;
    }

    /** close(2), whose failure leaves nothing to do: the descriptor is gone either way. */
    void close(int fd) {
        try {
            int ignored = (int) close.invokeExact(fd);
        } catch (Throwable t) {
            throw new IllegalStateException("close downcall failed", t);
        }
    }

    private static MemorySegment find(SymbolLookup lookup, String name) {
        return lookup.find(name).orElseThrow(() -> new UnsatisfiedLinkError(
                "libc has no " + name + "(); warden needs glibc 2.33 or newer (or musl) on Linux"));
    }

    /** Runs {@code call}; a negative result is a failure named {@code what}, with errno's description. */
    long invoke(String what, Call call) throws ErrnoException {
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

    int errno(MemorySegment state) {
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
