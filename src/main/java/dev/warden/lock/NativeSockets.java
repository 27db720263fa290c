package dev.warden.lock;

import static dev.warden.lock.Libc.INT;
import static dev.warden.lock.Libc.LONG;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Unix sockets through libc, for the switch: a listener made non-blocking, the peer's credentials as the kernel gives
 * them ({@code SO_PEERCRED}), and lines sent and received with a descriptor passed beside them ({@code SCM_RIGHTS}).
 */
final class NativeSockets {

    /** The same numbers on x86_64 and asm-generic. */
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

    private final Libc libc;
    private final MethodHandle socket;
    private final MethodHandle bind;
    private final MethodHandle listen;
    private final MethodHandle accept4;
    private final MethodHandle getsockopt;
    private final MethodHandle recvmsg;
    private final MethodHandle sendmsg;

    NativeSockets(Libc libc) {
        this.libc = libc;
        socket = libc.handle("socket");
        bind = libc.handle("bind");
        listen = libc.handle("listen");
        accept4 = libc.handle("accept4");
        getsockopt = libc.handle("getsockopt");
        recvmsg = libc.handle("recvmsg");
        sendmsg = libc.handle("sendmsg");
    }

    int listenUnix(String path, int backlog) throws Posix.ErrnoException {
        byte[] name = path.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        if (name.length >= SUN_PATH) {
            throw new Posix.ErrnoException("bind(" + path + ")", Errno.ENAMETOOLONG, "a Unix socket's path must be shorter than "
                    + SUN_PATH + " bytes");
        }
        int fd = (int) libc.invoke("socket(AF_UNIX)", (arena, state) -> (int) socket.invokeExact(state, AF_UNIX,
                SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        try {
            libc.invoke("bind(" + path + ")", (arena, state) -> {
                MemorySegment address = arena.allocate(2 + SUN_PATH, 2);
                address.set(ValueLayout.JAVA_SHORT, 0, (short) AF_UNIX);
                MemorySegment.copy(name, 0, address, ValueLayout.JAVA_BYTE, 2, name.length);
                return (int) bind.invokeExact(state, fd, address, 2 + name.length + 1);
            });
            libc.invoke("listen(" + path + ")", (arena, state) -> (int) listen.invokeExact(state, fd, backlog));
            return fd;
        } catch (Posix.ErrnoException e) {
            libc.close(fd);
            throw e;
        }
    }

    int accept(int listener) throws Posix.ErrnoException {
        try {
            return (int) libc.invoke("accept", (arena, state) -> (int) accept4.invokeExact(state, listener, MemorySegment.NULL,
                    MemorySegment.NULL, SOCK_NONBLOCK | SOCK_CLOEXEC));
        } catch (Posix.ErrnoException e) {
            if (e.errno() == Errno.EAGAIN || e.errno() == Errno.EINTR || e.errno() == Errno.ECONNABORTED) {
                return -1;
            }
            throw e;
        }
    }

    Posix.Peer peer(int socketFd) throws Posix.ErrnoException {
        Posix.Peer[] result = new Posix.Peer[1];
        libc.invoke("getsockopt(SO_PEERCRED)", (arena, state) -> {
            MemorySegment credentials = arena.allocate(12, 4);
            MemorySegment length = arena.allocateFrom(INT, 12);
            int rc = (int) getsockopt.invokeExact(state, socketFd, SOL_SOCKET, SO_PEERCRED, credentials, length);
            result[0] = new Posix.Peer(credentials.get(INT, 0), credentials.get(INT, 4), credentials.get(INT, 8));
            return rc;
        });
        return result[0];
    }

    Posix.Received receive(int socketFd, int max) throws Posix.ErrnoException {
        Posix.Received[] result = new Posix.Received[1];
        try {
            libc.invoke("recvmsg", (arena, state) -> {
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
                } while (n < 0 && libc.errno(state) == Errno.EINTR);
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
                result[0] = new Posix.Received(data.asSlice(0, n).toArray(ValueLayout.JAVA_BYTE), fds);
                return n;
            });
        } catch (Posix.ErrnoException e) {
            if (e.errno() == Errno.EAGAIN) {
                return null;
            }
            throw e;
        }
        return result[0];
    }

    long send(int socketFd, byte[] bytes, int passFd) throws Posix.ErrnoException {
        try {
            return libc.invoke("sendmsg", (arena, state) -> {
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
                } while (n < 0 && libc.errno(state) == Errno.EINTR);
                return n;
            });
        } catch (Posix.ErrnoException e) {
            if (e.errno() == Errno.EAGAIN) {
                return -1;
            }
            throw e;
        }
    }
}
