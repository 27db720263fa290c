package dev.warden.library;

import dev.warden.lock.CheckedDir;
import dev.warden.lock.Errno;
import dev.warden.lock.FileLocker;
import dev.warden.lock.HeldLock;
import dev.warden.lock.LockException;
import dev.warden.lock.SyncMark;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * lilbee's library locks with lilbee's policies (lock.py of the lilbee the project pins): the sync mark
 * ({@code <data root>/sync.lock}) and the LanceDB write lock ({@code <lancedb dir>/.lock}). A data root that cannot lock is
 * refused in lilbee's own words, its advice chosen by the errno as lilbee chooses it: a reset that cannot tell whether a
 * sync runs, and a sync that cannot mark itself, both refuse (the one case where lilbee lets a sync run unmarked, a
 * filesystem without hard links, does not arise here: lilbee's lock links only where {@code /proc/self/fd} cannot name
 * the database, and warden opens it by name).
 */
@Singleton
public class LibraryLocks {

    public static final String SYNC_LOCK = "sync.lock";
    public static final String WRITE_LOCK = ".lock";
    static final String SYNC_RUNNING = "A sync, an import, an add or a wiki build is running on this library. Reset again when it finishes.";
    // lilbee's texts, word for word: what a person reads is the same whichever of the two refused.
    private static final String NO_LOCKING = "%s is on a filesystem that does not support file locking. Move it to a local disk.";
    private static final String DATA_ROOT_UNLOCKABLE = "Cannot tell whether a sync or import is running: %s cannot be locked (%s).";
    private static final String SYNC_LOCK_UNKNOWN = "Cannot tell whether a sync or import is running: %1$s cannot be locked"
            + " (%2$s). Stop every lilbee process, delete %1$s, and reset again.";
    private static final String SYNC_REFUSED = "Cannot change the library: %s cannot be locked (%s). %s";
    private static final String DELETE_SYNC_LOCK = "Stop every lilbee process, delete %s, and try again.";
    private static final String FREE_OPEN_FILES = "Close some programs or raise the limit of open files, then try again.";
    private static final String MAKE_WRITABLE = "Make %s writable, then try again.";
    private static final Map<Integer, String> ADVICE_BY_ERRNO = Map.of(Errno.EMFILE, FREE_OPEN_FILES, Errno.ENFILE,
            FREE_OPEN_FILES, Errno.ENOSPC, "Free some disk space, then try again.", Errno.EACCES, MAKE_WRITABLE, Errno.EPERM,
            MAKE_WRITABLE, Errno.EROFS, MAKE_WRITABLE);
    private static final String FIX_THE_CAUSE = "Fix that problem, then try again.";
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
     * reset runs.
     *
     * @throws LockTimeoutException when a reset still runs after {@code timeout}
     * @throws LibraryUnlockableException when the mark cannot be taken at all: the data root or its
     *     sync.lock cannot lock, and a sync unmarked would let a reset delete what it writes
     */
    public SyncMark.Held syncRunning(Path dataRoot, Duration timeout) throws LockTimeoutException, LibraryUnlockableException {
        Path path = dataRoot.resolve(SYNC_LOCK);
        Optional<SyncMark.Unlockable> cannot = lockable(dataRoot);
        if (cannot.isPresent()) {
            throw new LibraryUnlockableException(cannot.get().noLocking() ? NO_LOCKING.formatted(dataRoot)
                    : SYNC_REFUSED.formatted(dataRoot, cannot.get().cause(), advice(dataRoot, cannot.get())), cannot.get());
        }
        try {
            return mark.read(path, timeout);
        } catch (SyncMark.Busy e) {
            throw new LockTimeoutException("A reset is running on " + dataRoot + " (it holds " + path + "); gave up after "
                    + timeout.toMillis() + " ms.");
        } catch (SyncMark.Unlockable e) {
            throw new LibraryUnlockableException(SYNC_REFUSED.formatted(path, e.cause(), advice(path, e)), e);
        }
    }

    /** What lilbee tells a person to do about {@code why}, which kept {@code path} from locking. */
    private static String advice(Path path, SyncMark.Unlockable why) {
        if (path.getFileName().toString().equals(SYNC_LOCK) && why.notADatabase()) {
            return DELETE_SYNC_LOCK.formatted(path);
        }
        String advice = why.errno().isPresent() ? ADVICE_BY_ERRNO.get(why.errno().getAsInt()) : null;
        return (advice != null ? advice : FIX_THE_CAUSE).formatted(path);
    }

    /**
     * Keeps syncs off {@code dataRoot} for a reset: takes the write mark without waiting.
     *
     * @throws ResetRefusedException while any sync or import runs, or when the mark cannot be taken at all
     */
    public SyncMark.Held noSyncRunning(Path dataRoot) throws ResetRefusedException {
        Path path = dataRoot.resolve(SYNC_LOCK);
        Optional<SyncMark.Unlockable> cannot = lockable(dataRoot);
        if (cannot.isPresent()) {
            throw new ResetRefusedException(cannot.get().noLocking() ? NO_LOCKING.formatted(dataRoot)
                    : DATA_ROOT_UNLOCKABLE.formatted(dataRoot, cannot.get().cause()), cannot.get());
        }
        try {
            return mark.write(path);
        } catch (SyncMark.Busy e) {
            throw new ResetRefusedException(SYNC_RUNNING);
        } catch (SyncMark.Unlockable e) {
            throw new ResetRefusedException(SYNC_LOCK_UNKNOWN.formatted(path, e.cause()), e);
        }
    }

    /** Creates the data root and probes that its filesystem can lock, as lilbee does first; empty when it can. */
    private Optional<SyncMark.Unlockable> lockable(Path dataRoot) {
        try {
            CheckedDir.createDirectories(dataRoot);
        } catch (IOException e) {
            return Optional.of(SyncMark.Unlockable.of(dataRoot, e));
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
