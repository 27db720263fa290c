package dev.warden.lock;

import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An exclusive {@code flock(2)} lock this process holds. The kernel releases it the moment the
 * process exits, however it dies; {@link #close()} releases it sooner. Closing twice is harmless,
 * and the lock file is never deleted: a peer may already be waiting on it.
 */
public final class HeldLock implements AutoCloseable {

    private final Posix posix;
    private final Path path;
    private final int fd;
    private final FileId id;
    private final AtomicBoolean open = new AtomicBoolean(true);

    HeldLock(Posix posix, Path path, int fd, FileId id) {
        this.posix = posix;
        this.path = path;
        this.fd = fd;
        this.id = id;
    }

    public Path path() {
        return path;
    }

    public FileId fileId() {
        return id;
    }

    /** The descriptor, for tests that look at its flags in /proc. */
    int fd() {
        return fd;
    }

    /**
     * The descriptor, to pass to another process (SCM_RIGHTS): the lock is on the open file, so a process given it
     * holds the lock too, until its last descriptor of it is closed.
     */
    public int descriptorToPass() {
        return fd;
    }

    public boolean isHeld() {
        return open.get();
    }

    /**
     * Whether the path still names the file this lock is on. If someone unlinked or replaced it,
     * a newcomer can lock the new file while this lock guards nothing.
     */
    public boolean stillAtPath() {
        try {
            return id.equals(posix.statAt(Posix.AT_FDCWD, path.toString()).id());
        } catch (Posix.ErrnoException e) {
            return false;
        }
    }

    /**
     * Unlocks the open file, then closes this descriptor: unlike {@link #close()}, the lock ends at once for every
     * process that was given a descriptor of the same open file, however long it lives on.
     */
    public void unlockAndClose() throws Posix.ErrnoException {
        if (open.get()) {
            try {
                posix.unlock(fd);
            } finally {
                close();
            }
        }
    }

    @Override
    public void close() {
        if (open.compareAndSet(true, false)) {
            posix.close(fd);
        }
    }

    @Override
    public String toString() {
        return "HeldLock[" + path + (isHeld() ? ", held]" : ", released]");
    }
}
