package dev.warden.lock;

/** Linux errno values warden tells apart (the same on x86_64 and aarch64). */
public final class Errno {
    public static final int EPERM = 1;
    public static final int ENOENT = 2;
    public static final int ESRCH = 3;
    public static final int EINTR = 4;
    public static final int ENXIO = 6;
    public static final int EBADF = 9;
    public static final int EAGAIN = 11;
    public static final int EWOULDBLOCK = EAGAIN;
    public static final int EACCES = 13;
    public static final int EEXIST = 17;
    public static final int EXDEV = 18;
    public static final int ENOTDIR = 20;
    public static final int EISDIR = 21;
    public static final int EINVAL = 22;
    public static final int ENFILE = 23;
    public static final int EMFILE = 24;
    public static final int ENOSPC = 28;
    public static final int EROFS = 30;
    public static final int EPIPE = 32;
    public static final int ENOLCK = 37;
    public static final int ENAMETOOLONG = 36;
    public static final int ENOSYS = 38;
    public static final int ELOOP = 40;
    public static final int ENOTSOCK = 88;
    public static final int EOPNOTSUPP = 95;
    public static final int EADDRINUSE = 98;
    public static final int ECONNABORTED = 103;
    public static final int ECONNREFUSED = 111;

    private Errno() {
    }
}
