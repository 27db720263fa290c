package dev.warden.lock;

/** What makes a file the same file: its device and inode, as {@code stat(2)} reports them. */
public record FileId(long device, long inode) {

    /** The device's major number, decoded as glibc's {@code gnu_dev_major} does. */
    public long major() {
        return ((device >>> 8) & 0xfffL) | ((device >>> 32) & ~0xfffL);
    }

    /** The device's minor number, decoded as glibc's {@code gnu_dev_minor} does. */
    public long minor() {
        return (device & 0xffL) | ((device >>> 12) & ~0xffL);
    }
}
