package dev.warden.lock;

import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.LongAdder;

/**
 * Takes exclusive {@code flock(2)} locks exactly as lilbee's filelock does, so a lock held by
 * warden refuses lilbee and a lock held by lilbee refuses warden.
 *
 * <p>After every successful {@code flock} the locked descriptor is checked against the path
 * (device and inode): filelock 3.21 to 3.29 unlinked the lock file on release, and a waiter that
 * then wins the old, unlinked file would hold a lock nobody else can see. Such a win is dropped
 * and the path is locked again.
 */
public final class FileLocker {

    /**
     * How many times in a row the file may be swapped under us before we call it hostile. A
     * well-behaved peer swaps it at most once per release; a thousand in a row is a loop.
     */
    private static final int MAX_REPLACED_RETRIES = 1000;

    private final Posix posix;
    private final LongAdder replacedFileRetries = new LongAdder();

    public FileLocker(Posix posix) {
        this.posix = posix;
    }

    /** Locks {@code path} now or not at all: empty when another process holds it. */
    public Optional<HeldLock> tryLock(Path path) throws LockException {
        return Optional.ofNullable(acquire(path, false));
    }

    /**
     * Locks {@code path}, waiting in the kernel while another process holds it, so the wait ends
     * the instant the holder releases or dies. Run it on a thread that may block.
     */
    public HeldLock lock(Path path) throws LockException {
        return acquire(path, true);
    }

    /**
     * {@link #tryLock(Path)} after creating the lock file's missing directories, each checked on the way
     * ({@link CheckedDir#createDirectories}): for the locks warden holds itself, whose directory a fresh
     * volume may not have yet.
     */
    public Optional<HeldLock> tryLockCreatingDirs(Path path) throws LockException {
        try {
            CheckedDir.createDirectories(posix, path.getParent());
        } catch (IOException e) {
            throw new LockException("Cannot create " + path.getParent() + " (" + e + "): warden needs it to hold "
                    + path.getFileName() + ". Check the volume and its permissions.", e);
        }
        return tryLock(path);
    }

    /**
     * {@link #lock}, the wait in the kernel off the caller's thread ({@link Posix#lockWhenFree}), for a keeper that must
     * go on turning while it waits. If the future is cancelled first (warden stops), a lock won afterwards is let go at
     * once.
     */
    public CompletableFuture<HeldLock> lockInBackground(Path path) {
        CompletableFuture<HeldLock> attempt = new CompletableFuture<>();
        lockInBackground(path, attempt, 0);
        return attempt;
    }

    /** One try of {@link #acquire}'s loop: a win now, a wait in the kernel, or a failure; a win on a replaced file tries again. */
    private void lockInBackground(Path path, CompletableFuture<HeldLock> attempt, int unwaitedReplacements) {
        if (unwaitedReplacements >= MAX_REPLACED_RETRIES) {
            attempt.completeExceptionally(replacedTooOften(path));
            return;
        }
        int fd;
        try {
            fd = openToLock(path);
        } catch (IOException e) {
            attempt.completeExceptionally(openFailure(path, e));
            return;
        }
        try {
            posix.lockExclusive(fd, false);
            won(path, fd, attempt, unwaitedReplacements + 1);
        } catch (Posix.ErrnoException e) {
            if (!isContention(e.errno())) {
                posix.close(fd);
                attempt.completeExceptionally(lockFailure(path, e));
                return;
            }
            posix.lockWhenFree(fd).whenComplete((granted, failure) -> {
                if (failure != null) {
                    posix.close(fd);
                    attempt.completeExceptionally(failure instanceof Posix.ErrnoException errno ? lockFailure(path, errno) : failure);
                } else {
                    won(path, fd, attempt, 0);
                }
            });
        }
    }

    /** The lock on {@code fd} is this open file's: held, if it is the file at the path and still wanted; else let go. */
    private void won(Path path, int fd, CompletableFuture<HeldLock> attempt, int unwaitedReplacements) {
        FileId locked;
        try {
            locked = posix.fstat(fd).id();
        } catch (Posix.ErrnoException e) {
            posix.close(fd);
            attempt.completeExceptionally(new LockException("Cannot check lock file " + path + " after locking it: "
                    + e.getMessage(), e));
            return;
        }
        if (!locked.equals(currentId(path))) {
            posix.close(fd);
            replacedFileRetries.increment();
            lockInBackground(path, attempt, unwaitedReplacements);
            return;
        }
        if (!attempt.complete(new HeldLock(posix, path, fd, locked))) {
            posix.close(fd);
        }
    }

    /** {@link #awaitRelease} on a thread of its own: completes when the holder of {@code path} lets go or dies. */
    public CompletableFuture<Void> awaitReleaseInBackground(Path path) {
        CompletableFuture<Void> released = new CompletableFuture<>();
        Thread.ofPlatform().daemon().name("warden-release-wait").start(() -> {
            try {
                awaitRelease(path);
                released.complete(null);
            } catch (LockException | RuntimeException e) {
                released.completeExceptionally(e);
            }
        });
        return released;
    }

    /**
     * Locks {@code path}, asking again every {@code poll} (as filelock does) until {@code timeout}
     * has passed: for waits that must end, such as a manual stop's wait for the build lock.
     */
    public Optional<HeldLock> tryLock(Path path, Duration timeout, Duration poll) throws LockException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            Optional<HeldLock> lock = tryLock(path);
            if (lock.isPresent() || System.nanoTime() >= deadline) {
                return lock;
            }
            try {
                Thread.sleep(Math.max(1, Math.min(poll.toMillis(), (deadline - System.nanoTime()) / 1_000_000)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return Optional.empty();
            }
        }
    }

    /**
     * Waits, in the kernel, until whoever holds {@code path} lets go or dies, then lets go at once:
     * a wake-up, not a lock. Never creates the file (a user's lock must not be recreated by the
     * watcher); returns at once when there is no file.
     */
    public void awaitRelease(Path path) throws LockException {
        int fd;
        try {
            fd = openToLook(path);
        } catch (Posix.ErrnoException e) {
            if (e.errno() == Errno.ENOENT) {
                return;
            }
            throw openFailure(path, e);
        } catch (IOException e) {
            throw openFailure(path, e);
        }
        try {
            posix.lockExclusive(fd, true);
        } catch (Posix.ErrnoException e) {
            throw lockFailure(path, e);
        } finally {
            posix.close(fd);
        }
    }

    /**
     * Refuses a lock file on a filesystem that cannot lock at all (ENOLCK, ENOSYS), as {@code lilbee serve} refuses its
     * data dir: a non-blocking flock of {@code lockFile}, created with its directories as lilbee creates its own, let go
     * at once. Another holder is no refusal, nor is a file that cannot be had now (a volume not mounted yet).
     *
     * @throws LockException only one whose {@link LockException#noLocking} is true
     */
    public void requireLocking(Path lockFile) throws LockException {
        try {
            tryLockCreatingDirs(lockFile).ifPresent(HeldLock::close);
        } catch (LockException e) {
            if (e.noLocking()) {
                throw e;
            }
        }
    }

    /**
     * Looks at a lock without creating its file: takes it and lets go at once when it is free.
     * A peer that asks in that instant is refused once and, like filelock, asks again.
     */
    public LockProbe probe(Path path) throws LockException {
        int fd;
        try {
            fd = openToLook(path);
        } catch (Posix.ErrnoException e) {
            if (e.errno() == Errno.ENOENT) {
                return LockProbe.ABSENT;
            }
            throw openFailure(path, e);
        } catch (IOException e) {
            throw openFailure(path, e);
        }
        try {
            posix.lockExclusive(fd, false);
            return LockProbe.FREE;
        } catch (Posix.ErrnoException e) {
            if (isContention(e.errno())) {
                return LockProbe.HELD;
            }
            throw lockFailure(path, e);
        } finally {
            posix.close(fd);
        }
    }

    /**
     * Takes over descriptor {@code fd}, another process's open file passed over a Unix socket, as a lock this process
     * holds: only when it is the file at {@code path} and the kernel shows an exclusive flock taken through that very
     * open file ({@link ProcFs#exclusiveFlock}, read through this process's own descriptor). No lock is taken here: a
     * descriptor of a free file would have this process share a fresh lock with its sender, who could unlock it at will.
     * Otherwise the descriptor is closed and nothing is held.
     */
    public Optional<HeldLock> adopt(int fd, Path path, ProcFs procs) {
        try {
            FileId id = posix.fstat(fd).id();
            if (id.equals(currentId(path)) && procs.exclusiveFlock(procs.self(), fd, id)) {
                return Optional.of(new HeldLock(posix, path, fd, id));
            }
        } catch (Posix.ErrnoException e) {
            // not a file this process can look at: not the lock
        }
        posix.close(fd);
        return Optional.empty();
    }

    /** How often a won lock turned out to be on a file no longer at its path (for metrics and tests). */
    public long replacedFileRetries() {
        return replacedFileRetries.sum();
    }

    private HeldLock acquire(Path path, boolean wait) throws LockException {
        // Only a win that did not have to wait counts towards giving up: a peer that unlinks the file
        // on release (filelock 3.21-3.29) can make a waiter lose many times in a row, each after a
        // real wait, while a process that just keeps deleting the file would make this loop spin.
        int unwaitedReplacements = 0;
        while (unwaitedReplacements < MAX_REPLACED_RETRIES) {
            int fd;
            try {
                fd = openToLock(path);
            } catch (IOException e) {
                throw openFailure(path, e);
            }
            boolean waited = false;
            try {
                try {
                    posix.lockExclusive(fd, false);
                } catch (Posix.ErrnoException e) {
                    if (!wait || !isContention(e.errno())) {
                        throw e;
                    }
                    waited = true;
                    posix.lockExclusive(fd, true);
                }
            } catch (Posix.ErrnoException e) {
                posix.close(fd);
                if (!wait && isContention(e.errno())) {
                    return null;
                }
                throw lockFailure(path, e);
            }
            FileId locked;
            try {
                locked = posix.fstat(fd).id();
            } catch (Posix.ErrnoException e) {
                posix.close(fd);
                throw new LockException("Cannot check lock file " + path + " after locking it: " + e.getMessage(), e);
            }
            if (locked.equals(currentId(path))) {
                return new HeldLock(posix, path, fd, locked);
            }
            posix.close(fd);
            replacedFileRetries.increment();
            unwaitedReplacements = waited ? 0 : unwaitedReplacements + 1;
        }
        throw replacedTooOften(path);
    }

    private static LockException replacedTooOften(Path path) {
        return new LockException("Lock file " + path + " was replaced " + MAX_REPLACED_RETRIES
                + " times in a row while warden locked it. Something keeps deleting it: stop that process"
                + " (lilbee never deletes it; filelock 3.21 to 3.29 did, so upgrade filelock).");
    }

    /** What is at {@code path} now, a link not followed: the check that a won lock is on the file at its path. */
    private FileId currentId(Path path) {
        try {
            return posix.statAt(Posix.AT_FDCWD, path.toString()).id();
        } catch (Posix.ErrnoException e) {
            return null;
        }
    }

    /**
     * Opens an existing lock file read-only (flock needs no more) to look at it or wait on it,
     * relative to its checked directory: a lock file, or a directory on its way, swapped for a link is
     * refused rather than followed, and a FIFO or a directory in its place is refused without blocking.
     */
    private int openToLook(Path path) throws IOException {
        try (CheckedDir dir = CheckedDir.open(posix, path.toAbsolutePath().getParent())) {
            return dir.open(path.getFileName().toString(), Posix.Open.READ);
        }
    }

    /**
     * Opens a lock file to take it, creating it when missing. One another user created and warden may
     * not write (filelock creates them 0644 under the usual umask) is opened read-only: flock(2) needs
     * no write access, and refusing it would take a live peer's lock for none at all.
     */
    private int openToLock(Path path) throws IOException {
        try (CheckedDir dir = CheckedDir.open(posix, path.toAbsolutePath().getParent())) {
            String name = path.getFileName().toString();
            try {
                return dir.open(name, Posix.Open.READ_WRITE_CREATE);
            } catch (Posix.ErrnoException e) {
                if (e.errno() != Errno.EACCES) {
                    throw e;
                }
                try {
                    return dir.open(name, Posix.Open.READ);
                } catch (Posix.ErrnoException readOnly) {
                    // Absent in a directory warden may not write: the first refusal says why.
                    throw e;
                }
            }
        }
    }

    static boolean isContention(int errno) {
        return errno == Errno.EWOULDBLOCK || errno == Errno.EACCES;
    }

    private static LockException openFailure(Path path, IOException failure) {
        Path dir = path.getParent();
        if (!(failure instanceof Posix.ErrnoException e)) {
            // Opened, but not a regular file (a FIFO, a device): never locked, never read.
            String reason = failure instanceof FileSystemException f && f.getReason() != null ? f.getReason() : failure.toString();
            return new LockException("Lock file " + path + " " + reason
                    + ". Remove it: lilbee and warden recreate their lock files as regular files.", failure);
        }
        String message = switch (e.errno()) {
            case Errno.ENOENT, Errno.ENOTDIR -> "Cannot open lock file " + path + ": the directory " + dir
                    + " does not exist. Create it, or point warden at the data dir lilbee uses.";
            case Errno.EACCES, Errno.EPERM -> "Cannot open lock file " + path + ": permission denied for uid "
                    + currentUid() + ". Give warden write access to " + dir
                    + " (run it as lilbee's UID, or use an fsGroup with group-writable files).";
            case Errno.EROFS -> "Cannot open lock file " + path + ": " + dir
                    + " is on a read-only filesystem. Mount it read-write: warden must create its lock files.";
            case Errno.ELOOP -> "Lock file " + path + " or a directory on its way is a symbolic link that warden did not"
                    + " resolve at start. Lock files are never reached through links on the shared volume (filelock"
                    + " refuses a linked lock file too): replace the link with a regular file or directory, or remove it.";
            case Errno.EISDIR -> "Lock file " + path + " is a directory, not a file. Remove or rename it.";
            default -> "Cannot open lock file " + path + ": " + e.getMessage() + ". Check the volume holding " + dir + ".";
        };
        return new LockException(message, e);
    }

    private static LockException lockFailure(Path path, Posix.ErrnoException e) {
        Path dir = path.getParent();
        return switch (e.errno()) {
            case Errno.ENOLCK -> LockException.noLocking(dir, "flock on " + path + " failed with ENOLCK: in Kubernetes an"
                    + " emptyDir, a hostPath or a block-backed PVC; on NFS, run its lock daemon", e);
            case Errno.ENOSYS -> LockException.noLocking(dir, "flock on " + path + " failed with ENOSYS, a filesystem without"
                    + " flock(2): warden will not fall back to a marker file, which cannot notice a dead holder", e);
            default -> new LockException("Cannot lock " + path + ": " + e.getMessage() + ". Check the volume holding " + dir + ".", e);
        };
    }

    /** The uid warden runs as, for messages about permissions ("?" when /proc cannot say). */
    public static String currentUid() {
        try {
            return String.valueOf(Files.getAttribute(Path.of("/proc/self"), "unix:uid"));
        } catch (IOException | UnsupportedOperationException e) {
            return "?";
        }
    }
}
