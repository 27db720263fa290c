package dev.warden.lock;

/**
 * What {@code fstat(2)} says of a file that warden acts on: which file it is, its type, its size and the
 * UID that owns it (who wrote it, for a record that could make warden signal a process).
 */
public record FileStat(FileId id, int mode, long size, int uid) {

    private static final int S_IFMT = 0170000;
    private static final int S_IFREG = 0100000;
    private static final int S_IFDIR = 0040000;
    private static final int S_IFLNK = 0120000;

    public boolean isRegularFile() {
        return (mode & S_IFMT) == S_IFREG;
    }

    public boolean isDirectory() {
        return (mode & S_IFMT) == S_IFDIR;
    }

    public boolean isSymbolicLink() {
        return (mode & S_IFMT) == S_IFLNK;
    }

    /** A word for the file's type, for messages: never its content. */
    public String type() {
        return switch (mode & S_IFMT) {
            case S_IFREG -> "a regular file";
            case S_IFDIR -> "a directory";
            case S_IFLNK -> "a symbolic link";
            case 0010000 -> "a FIFO";
            case 0140000 -> "a socket";
            case 0020000 -> "a character device";
            case 0060000 -> "a block device";
            default -> "a file of unknown type";
        };
    }
}
