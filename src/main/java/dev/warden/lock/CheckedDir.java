package dev.warden.lock;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * A directory on the shared volume, opened and checked once: every name in it is then opened,
 * read, replaced and deleted relative to this descriptor. A neighbour who swaps the directory, or
 * a directory on its way, for a symbolic link after the check redirects nothing; a name swapped for
 * a link is refused ({@code O_NOFOLLOW}), one swapped for a FIFO does not block ({@code O_NONBLOCK}
 * and a type check on the open descriptor), and a huge one is read only up to a cap.
 *
 * <p>warden resolves its directories' links once, at start ({@code LilbeePaths}); the check is that
 * the directory opened is the one at that resolved path, with no link anywhere on the way.
 */
public final class CheckedDir implements AutoCloseable {

    private static final Path PROC_FD = Path.of("/proc/self/fd");

    private final Posix posix;
    private final Path path;
    private final int fd;

    private CheckedDir(Posix posix, Path path, int fd) {
        this.posix = posix;
        this.path = path;
        this.fd = fd;
    }

    /** Opens {@code dir} with the process's libc. */
    public static CheckedDir open(Path dir) throws IOException {
        return open(NativePosix.shared(), dir);
    }

    /**
     * Opens {@code dir}, refusing it (ELOOP) when it or any directory on its way is a symbolic link:
     * the kernel's own name for the directory opened must be {@code dir}, absolute and normalised.
     */
    public static CheckedDir open(Posix posix, Path dir) throws IOException {
        Path expected = dir.toAbsolutePath().normalize();
        int fd = openDirectory(posix, Posix.AT_FDCWD, expected.toString(), expected);
        try {
            if (!posix.pathOf(fd).equals(expected)) {
                throw new Posix.ErrnoException("open(" + expected + ")", Errno.ELOOP,
                        "a directory on its way is a symbolic link, or was moved, since warden resolved the path");
            }
        } catch (IOException e) {
            posix.close(fd);
            throw e;
        }
        return new CheckedDir(posix, expected, fd);
    }

    /**
     * Creates {@code dir} and its missing parents, as {@code Files.createDirectories} does, but each
     * new directory with {@code mkdirat} in its checked parent: nothing is created through a directory
     * swapped for a link since warden resolved the path. An existing {@code dir} is checked as {@link #open}
     * checks it. Failures are the exceptions {@code Files.createDirectories} throws, naming the path.
     */
    public static void createDirectories(Path dir) throws IOException {
        createDirectories(NativePosix.shared(), dir);
    }

    /** {@link #createDirectories(Path)} with {@code posix}. */
    public static void createDirectories(Posix posix, Path dir) throws IOException {
        Path target = dir.toAbsolutePath().normalize();
        Path existing = target;
        List<String> missing = new ArrayList<>();
        while (existing.getParent() != null && !exists(posix, existing)) {
            missing.addFirst(existing.getFileName().toString());
            existing = existing.getParent();
        }
        Path at = existing;
        try {
            CheckedDir current = open(posix, existing);
            try {
                for (String name : missing) {
                    at = at.resolve(name);
                    try {
                        current.posix.mkdirAt(current.fd, name);
                    } catch (Posix.ErrnoException e) {
                        if (e.errno() != Errno.EEXIST) {
                            throw e;
                        }
                    }
                    CheckedDir next = current.child(name);
                    current.close();
                    current = next;
                }
            } finally {
                current.close();
            }
        } catch (Posix.ErrnoException e) {
            FileSystemException thrown = switch (e.errno()) {
                case Errno.EACCES, Errno.EPERM -> new AccessDeniedException(at.toString());
                case Errno.ENOENT -> new NoSuchFileException(at.toString());
                default -> new FileSystemException(at.toString(), null, e.getMessage());
            };
            // The errno stays with it: what lilbee's advice is chosen by.
            thrown.initCause(e);
            throw thrown;
        }
    }

    /** Whether anything is at {@code path}, a link not followed. */
    private static boolean exists(Posix posix, Path path) {
        try {
            posix.statAt(Posix.AT_FDCWD, path.toString());
            return true;
        } catch (Posix.ErrnoException e) {
            return e.errno() != Errno.ENOENT;
        }
    }

    public Path path() {
        return path;
    }

    /** A directory in this one, never through a link. */
    public CheckedDir child(String name) throws IOException {
        Path child = path.resolve(checked(name));
        return new CheckedDir(posix, child, openDirectory(posix, fd, name, child));
    }

    /** Opens a directory; a link in its place is ELOOP, as the kernel says of a link on the way (not ENOTDIR). */
    private static int openDirectory(Posix posix, int dirFd, String name, Path path) throws Posix.ErrnoException {
        try {
            return posix.openAt(dirFd, name, Posix.Open.DIRECTORY);
        } catch (Posix.ErrnoException e) {
            if (e.errno() == Errno.ENOTDIR && posix.statAt(dirFd, name).isSymbolicLink()) {
                throw new Posix.ErrnoException("open(" + path + ")", Errno.ELOOP, "it is a symbolic link");
            }
            throw e;
        }
    }

    /** The names in this directory matching {@code glob}, sorted; what each name is, is for the caller to check. */
    public List<String> names(String glob) throws IOException {
        List<String> names = new ArrayList<>();
        // /proc/self/fd/<fd> leads to the very directory this descriptor holds open, wherever its path now leads.
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(PROC_FD.resolve(Integer.toString(fd)), glob)) {
            for (Path entry : entries) {
                names.add(entry.getFileName().toString());
            }
        }
        names.sort(null);
        return names;
    }

    /** What {@code name} is, without following a link; empty when there is no such name. */
    public Optional<FileStat> stat(String name) throws IOException {
        try {
            return Optional.of(posix.statAt(fd, checked(name)));
        } catch (Posix.ErrnoException e) {
            if (e.errno() == Errno.ENOENT) {
                return Optional.empty();
            }
            throw e;
        }
    }

    /**
     * The content of the regular file {@code name}, at most {@code cap + 1} bytes (so a caller can
     * tell a file over its cap from one exactly at it).
     *
     * @throws FileSystemException when {@code name} is not a regular file (a link, a FIFO, a directory)
     */
    public byte[] read(String name, int cap) throws IOException {
        return readOwned(name, cap).bytes();
    }

    /** A file's first bytes and the UID that owns it, both from the one descriptor that was read. */
    public record Owned(byte[] bytes, int uid) {
    }

    /** As {@link #read}, with the owner the open's own check saw. */
    public Owned readOwned(String name, int cap) throws IOException {
        Opened file = opened(name, Posix.Open.READ);
        try {
            return new Owned(posix.read(file.fd(), cap + 1), file.stat().uid());
        } finally {
            posix.close(file.fd());
        }
    }

    /**
     * Opens the regular file {@code name}; the caller closes the descriptor.
     *
     * @throws FileSystemException when it is not a regular file
     */
    public int open(String name, Posix.Open how) throws IOException {
        return opened(name, how).fd();
    }

    /** An open regular file and what {@code fstat} said of it when its type was checked. */
    private record Opened(int fd, FileStat stat) {
    }

    private Opened opened(String name, Posix.Open how) throws IOException {
        int file = posix.openAt(fd, checked(name), how);
        try {
            FileStat stat = posix.fstat(file);
            if (!stat.isRegularFile()) {
                throw new FileSystemException(path.resolve(name).toString(), null, "is " + stat.type() + ", not a regular file");
            }
            return new Opened(file, stat);
        } catch (IOException | RuntimeException e) {
            posix.close(file);
            throw e;
        }
    }

    /**
     * Replaces {@code name} with {@code content} atomically: written to a new file under a name no
     * one can predict (created exclusively, so a link planted there is refused, never followed),
     * then renamed over {@code name}. A reader sees the old content or the new, never half of it.
     */
    public void replace(String name, byte[] content) throws IOException {
        String temp = "." + checked(name) + "." + UUID.randomUUID().toString().replace("-", "") + ".tmp";
        int file = posix.openAt(fd, temp, Posix.Open.CREATE_NEW);
        boolean renamed = false;
        try {
            posix.write(file, content);
            posix.renameAt(fd, temp, name);
            renamed = true;
        } finally {
            posix.close(file);
            if (!renamed) {
                posix.unlinkAt(fd, temp);
            }
        }
    }

    /** Deletes {@code name} from this directory; false when it was not there. */
    public boolean delete(String name) throws IOException {
        return posix.unlinkAt(fd, checked(name));
    }

    /**
     * Deletes {@code name} only if it is still the file {@code id} (one warden has just locked, say),
     * so a file a neighbour put in its place since is left alone.
     */
    public boolean deleteIfSame(String name, FileId id) throws IOException {
        Optional<FileStat> now = stat(name);
        return now.isPresent() && now.get().id().equals(id) && delete(name);
    }

    @Override
    public void close() {
        posix.close(fd);
    }

    /** A name, never a path: openat would follow a slash out of this directory. */
    private String checked(String name) {
        if (name.isEmpty() || name.contains("/") || name.equals(".") || name.equals("..") || name.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("not a file name in " + path + ": " + name);
        }
        return name;
    }
}
