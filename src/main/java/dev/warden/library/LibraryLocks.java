package dev.warden.library;

import dev.warden.lock.CheckedDir;
import dev.warden.lock.FileLocker;
import dev.warden.lock.HeldLock;
import dev.warden.lock.LockException;
import dev.warden.lock.SyncMark;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.jboss.logging.Logger;

/**
 * lilbee's library locks with lilbee's policies (seed lock.py): the sync mark
 * ({@code <data root>/sync.lock}) and the LanceDB write lock ({@code <lancedb dir>/.lock}).
 */
@Singleton
public class LibraryLocks {

    public static final String SYNC_LOCK = "sync.lock";
    public static final String WRITE_LOCK = ".lock";
    static final String SYNC_RUNNING = "A sync, an import, an add or a wiki build is running on this library. Reset again when it finishes.";
    private static final Logger LOG = Logger.getLogger(LibraryLocks.class);
    /**
     * Minimum blocking wait granted to the in-process mutex even when the file lock used the whole
     * budget, so a file lock won right at the deadline still gets a real attempt.
     */
    private static final Duration MUTEX_MIN_WAIT = Duration.ofMillis(100);
    /** filelock's poll interval while the write lock's file stage waits. */
    private static final Duration FILE_LOCK_POLL = Duration.ofMillis(50);

    private final FileLocker locker;
    private final SyncMark mark;
    /**
     * Serialises writers within this process, as lilbee's does; the file lock serialises them
     * across processes.
     */
    private final ReentrantLock writeMutex;

    @Inject
    public LibraryLocks(FileLocker locker, SyncMark mark) {
        this(locker, mark, new ReentrantLock());
    }

    LibraryLocks(FileLocker locker, SyncMark mark, ReentrantLock writeMutex) {
        this.locker = locker;
        this.mark = mark;
        this.writeMutex = writeMutex;
    }

    /**
     * Marks a sync or import running on {@code dataRoot}, waiting up to {@code timeout} while a
     * reset runs. Empty when the mark cannot be taken at all: the sync then runs unmarked, after
     * one warning, as lilbee's does.
     *
     * @throws LockTimeoutException when a reset still runs after {@code timeout}
     */
    public Optional<SyncMark.Held> syncRunning(Path dataRoot, Duration timeout) throws LockTimeoutException {
        Path path = dataRoot.resolve(SYNC_LOCK);
        Optional<String> cannot = lockable(dataRoot);
        if (cannot.isPresent()) {
            LOG.warnf("Cannot lock %s (%s); a reset refuses until it can.", path, cannot.get());
            return Optional.empty();
        }
        try {
            return Optional.of(mark.read(path, timeout));
        } catch (SyncMark.Busy e) {
            throw new LockTimeoutException("A reset is running on " + dataRoot + " (it holds " + path + "); gave up after "
                    + timeout.toMillis() + " ms.");
        } catch (SyncMark.Unlockable e) {
            LOG.warnf("Cannot lock %s (%s); a reset refuses until it can.", path, e.getMessage());
            return Optional.empty();
        }
    }

    /**
     * Keeps syncs off {@code dataRoot} for a reset: takes the write mark without waiting.
     *
     * @throws ResetRefusedException while any sync or import runs, or when the mark cannot be taken at all
     */
    public SyncMark.Held noSyncRunning(Path dataRoot) throws ResetRefusedException {
        Path path = dataRoot.resolve(SYNC_LOCK);
        Optional<String> cannot = lockable(dataRoot);
        if (cannot.isPresent()) {
            throw new ResetRefusedException(unknown(path, cannot.get()));
        }
        try {
            return mark.write(path);
        } catch (SyncMark.Busy e) {
            throw new ResetRefusedException(SYNC_RUNNING);
        } catch (SyncMark.Unlockable e) {
            throw new ResetRefusedException(unknown(path, e.getCause() != null ? e.getCause().getMessage() : e.getMessage()), e);
        }
    }

    /** The seed's message for a reset that cannot tell: name the file, and the way out. */
    private static String unknown(Path path, String error) {
        return "Cannot tell whether a sync or import is running: " + path + " cannot be locked (" + error + "). "
                + "Stop every lilbee process, delete " + path + ", and reset again.";
    }

    /** Creates the data root and probes that its filesystem can lock; empty when it can. */
    private Optional<String> lockable(Path dataRoot) {
        try {
            CheckedDir.createDirectories(dataRoot);
        } catch (IOException e) {
            return Optional.of("cannot create " + dataRoot + ": " + e);
        }
        return mark.probe(dataRoot);
    }

    /**
     * The LanceDB write lock: the file lock, then the in-process mutex, sharing one deadline (the
     * mutex always gets at least 0.1 s). The directory is created if missing: the first write to a
     * store can come before its data dir exists.
     */
    public WriteHold writeLock(Path lancedbDir, Duration timeout) throws LockTimeoutException, LockException {
        long deadline = System.nanoTime() + timeout.toNanos();
        try {
            CheckedDir.createDirectories(lancedbDir);
        } catch (IOException e) {
            throw new LockException("Cannot create " + lancedbDir + " (" + e + "): check the data volume.", e);
        }
        Optional<HeldLock> file = locker.tryLock(lancedbDir.resolve(WRITE_LOCK), timeout, FILE_LOCK_POLL);
        if (file.isEmpty()) {
            throw new LockTimeoutException("Timed out waiting for exclusive file lock " + lancedbDir.resolve(WRITE_LOCK));
        }
        long remaining = Math.max(MUTEX_MIN_WAIT.toNanos(), deadline - System.nanoTime());
        boolean acquired;
        try {
            acquired = writeMutex.tryLock(remaining, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            acquired = false;
        }
        if (!acquired) {
            file.get().close();
            throw new LockTimeoutException("Timed out waiting for write lock (another writer in this process holds it)");
        }
        return new WriteHold(file.get(), writeMutex);
    }

    /**
     * One look, for status and readiness: asks the kernel who holds the sync mark (readers: a sync
     * or import; a writer: a reset) and probes the write lock. Takes no mark, so a lilbee reset asked
     * for during a look is never refused because of it.
     */
    public LibraryLook look(Path dataRoot, Path lancedbDir) {
        String writeLock;
        try {
            writeLock = locker.probe(lancedbDir.resolve(WRITE_LOCK)).name().toLowerCase();
        } catch (LockException e) {
            writeLock = "error";
        }
        try {
            SyncMark.Holders holders = mark.holders(dataRoot.resolve(SYNC_LOCK));
            return new LibraryLook(holders == SyncMark.Holders.READERS, holders == SyncMark.Holders.WRITER, writeLock,
                    Optional.empty());
        } catch (SyncMark.Unlockable e) {
            return new LibraryLook(false, false, writeLock, Optional.of(e.getMessage()));
        }
    }

    /** The held write lock: the mutex and the file lock, released in reverse. Closing twice is harmless. */
    public static final class WriteHold implements AutoCloseable {
        private final HeldLock file;
        private final ReentrantLock mutex;
        private boolean held = true;

        WriteHold(HeldLock file, ReentrantLock mutex) {
            this.file = file;
            this.mutex = mutex;
        }

        @Override
        public synchronized void close() {
            if (held) {
                held = false;
                mutex.unlock();
                file.close();
            }
        }
    }
}
