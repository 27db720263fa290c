package dev.warden.library;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.lock.FileLocker;
import dev.warden.lock.NativePosix;
import dev.warden.lock.SyncMark;
import dev.warden.testing.Await;
import dev.warden.testing.Peer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The sync mark and the LanceDB write lock against Python's sqlite3, the sqlite3 shell and flock(1). */
class LibraryLocksTest {

    @TempDir
    Path root;

    private final FileLocker locker = new FileLocker(new NativePosix());
    private final LibraryLocks library = new LibraryLocks(locker, new SyncMark());

    private Path syncLock() {
        return root.resolve("sync.lock");
    }

    @Test
    void aPythonSyncMakesAJavaResetRefuse() throws Exception {
        library.syncRunning(root, Duration.ofSeconds(1)).close();
        try (Peer python = Peer.pythonSqlite(syncLock(), "read", 5000)) {
            python.awaitLine("locked", Duration.ofSeconds(20));
            ResetRefusedException e = assertThrows(ResetRefusedException.class, () -> library.noSyncRunning(root));
            assertEquals("A sync, an import, an add or a wiki build is running on this library. Reset again when it finishes.", e.getMessage());
        }
        library.noSyncRunning(root).close();
    }

    @Test
    void aJavaSyncMakesAPythonResetRefuse() throws Exception {
        try (SyncMark.Held sync = library.syncRunning(root, Duration.ofSeconds(1));
                Peer python = Peer.pythonSqlite(syncLock(), "write", 0)) {
            List<String> lines = python.awaitLine("trying", Duration.ofSeconds(20));
            assertEquals(7, python.process().waitFor(), "filelock's non-blocking write must be refused: " + lines);
        }
    }

    @Test
    void aJavaResetMakesAPythonSyncWaitUntilItEnds() throws Exception {
        SyncMark.Held reset = library.noSyncRunning(root);
        try (Peer python = Peer.pythonSqlite(syncLock(), "read", 20_000)) {
            python.awaitLine("trying", Duration.ofSeconds(20));
            assertFalse(python.process().waitFor(300, java.util.concurrent.TimeUnit.MILLISECONDS),
                    "the sync must still be waiting, not refused");
            reset.close();
            python.awaitLine("locked", Duration.ofSeconds(20));
        }
    }

    @Test
    void syncsShareTheMarkAcrossProcesses() throws Exception {
        try (Peer python = Peer.pythonSqlite(syncLock(), "read", 0)) {
            try (SyncMark.Held javaSync = library.syncRunning(root, Duration.ofSeconds(1))) {
                python.awaitLine("locked", Duration.ofSeconds(20));
            }
            // Looked at from a process that holds no mark of its own, as status and serve are.
            LibraryLook look = library.look(root, root.resolve("lancedb"));
            assertTrue(look.syncRunning());
            assertFalse(look.resetRunning());
        }
    }

    /**
     * lilbee's reset takes the write mark without waiting: a look that took the mark for an instant
     * made some of them fail. Looks in a loop while a Python peer resets 300 times: none is refused.
     */
    @Test
    void noNumberOfLooksMakesALilbeeResetFail() throws Exception {
        Peer.assumePython();
        library.syncRunning(root, Duration.ofSeconds(1)).close();
        String resets = String.join("\n",
                "import sqlite3, sys",
                "refused = 0",
                "for _ in range(300):",
                "    con = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=0)",
                "    try:",
                "        con.execute('PRAGMA busy_timeout=0;')",
                "        con.execute('PRAGMA journal_mode=MEMORY;')",
                "        con.execute('BEGIN EXCLUSIVE TRANSACTION;')",
                "        con.execute('ROLLBACK;')",
                "    except sqlite3.OperationalError:",
                "        refused += 1",
                "    con.close()",
                "print('refused', refused, flush=True)");
        Process python = new ProcessBuilder("python3", "-c", resets, syncLock().toString()).redirectErrorStream(true).start();
        int looks = 0;
        while (python.isAlive()) {
            assertFalse(library.look(root, root.resolve("lancedb")).error().isPresent());
            looks++;
        }
        String out = new String(python.getInputStream().readAllBytes()).strip();
        assertEquals("refused 0", out, "after " + looks + " looks");
        assertTrue(looks > 10, "the looks ran alongside the resets: " + looks);
    }

    @Test
    void theSqliteShellsExclusiveTransactionIsAReset() throws Exception {
        Files.createDirectories(root);
        library.syncRunning(root, Duration.ofSeconds(1)).close();
        try (Peer shell = Peer.sqliteShellWriter(syncLock())) {
            LockTimeoutException e = assertThrows(LockTimeoutException.class,
                    () -> library.syncRunning(root, Duration.ofMillis(200)));
            assertTrue(e.getMessage().startsWith("A reset is running on " + root), e.getMessage());
            assertThrows(ResetRefusedException.class, () -> library.noSyncRunning(root));
            LibraryLook look = library.look(root, root.resolve("lancedb"));
            assertTrue(look.resetRunning());
            assertFalse(look.syncRunning());
        }
    }

    @Test
    void aJavaSyncMakesTheSqliteShellsExclusiveTransactionFail() throws Exception {
        try (SyncMark.Held sync = library.syncRunning(root, Duration.ofSeconds(1))) {
            Peer.sqliteShellWriter(root.resolve("other.db")).close(); // skips here when the shell is missing
            Process shell = new ProcessBuilder("sqlite3", syncLock().toString(), "BEGIN EXCLUSIVE TRANSACTION;")
                    .redirectErrorStream(true).start();
            String out = new String(shell.getInputStream().readAllBytes());
            shell.waitFor();
            assertTrue(out.contains("database is locked"), out);
        }
    }

    @Test
    void aSyncLockThatIsNotADatabaseRefusesAResetNamingTheFix() throws Exception {
        Files.writeString(syncLock(), "this is not a database, it is a note someone left here".repeat(40));
        ResetRefusedException e = assertThrows(ResetRefusedException.class, () -> library.noSyncRunning(root));
        assertTrue(e.getMessage().startsWith("Cannot tell whether a sync or import is running: " + syncLock()
                + " cannot be locked ("), e.getMessage());
        assertTrue(e.getMessage().endsWith("Stop every lilbee process, delete " + syncLock() + ", and reset again."),
                e.getMessage());
        LibraryUnlockableException sync = assertThrows(LibraryUnlockableException.class,
                () -> library.syncRunning(root, Duration.ofSeconds(1)));
        assertEquals("Cannot change the library: " + syncLock() + " cannot be locked (file is not a database). Stop every"
                + " lilbee process, delete " + syncLock() + ", and try again.", sync.getMessage());
        assertTrue(library.look(root, root.resolve("lancedb")).error().isPresent());
    }

    @Test
    void aSyncLockSwappedForALinkIsNeverOpenedThroughIt() throws Exception {
        // Finding 12: SQLite followed a symlinked sync.lock, creating and locking a database elsewhere.
        Path outside = root.resolveSibling(root.getFileName() + "-outside.db");
        Files.createSymbolicLink(syncLock(), outside);
        try {
            assertThrows(ResetRefusedException.class, () -> library.noSyncRunning(root));
            LibraryUnlockableException sync = assertThrows(LibraryUnlockableException.class,
                    () -> library.syncRunning(root, Duration.ofSeconds(1)));
            assertEquals("Cannot change the library: " + syncLock() + " cannot be locked ([Errno 40] Too many levels of"
                    + " symbolic links). Fix that problem, then try again.", sync.getMessage(), "lilbee's open meets ELOOP");
            assertFalse(Files.exists(outside), "nothing created through the link");
            assertTrue(library.look(root, root.resolve("lancedb")).error().isPresent());
        } finally {
            Files.deleteIfExists(outside);
        }
    }

    @Test
    void aDataRootThatCannotLockRefusesAResetAndASyncInLilbeesWords() throws Exception {
        // The data root under a regular file: it cannot be created, and nothing can be locked in it.
        Path file = Files.writeString(root.resolve("a-file"), "");
        Path dataRoot = file.resolve("data");
        ResetRefusedException reset = assertThrows(ResetRefusedException.class, () -> library.noSyncRunning(dataRoot));
        assertEquals("Cannot tell whether a sync or import is running: " + dataRoot + " cannot be locked ([Errno 20] Not a"
                + " directory).", reset.getMessage());
        LibraryUnlockableException sync = assertThrows(LibraryUnlockableException.class,
                () -> library.syncRunning(dataRoot, Duration.ofSeconds(1)));
        assertEquals("Cannot change the library: " + dataRoot + " cannot be locked ([Errno 20] Not a directory). Fix that"
                + " problem, then try again.", sync.getMessage());
    }

    @Test
    void theLockabilityProbeLeavesNoFileBehind() throws Exception {
        assertEquals(Optional.empty(), new SyncMark().probe(root).map(SyncMark.Unlockable::cause));
        library.syncRunning(root, Duration.ofSeconds(1)).close();
        library.noSyncRunning(root).close();
        try (Stream<Path> files = Files.list(root)) {
            assertEquals(List.of(syncLock()), files.toList());
        }
    }

    @Test
    void aProbeInADirectoryThatDoesNotExistSaysWhy() {
        assertTrue(new SyncMark().probe(root.resolve("missing")).isPresent());
    }

    @Test
    void theWriteLockIsAFlockOnTheLancedbLockFileAndCreatesItsDirectory() throws Exception {
        Path lancedb = root.resolve("data/lancedb");
        try (LibraryLocks.WriteHold hold = library.writeLock(lancedb, Duration.ofSeconds(1))) {
            assertFalse(Peer.flockCanTake(lancedb.resolve(".lock")));
            assertEquals("held", library.look(root, lancedb).writeLock());
        }
        assertTrue(Peer.flockCanTake(lancedb.resolve(".lock")));
    }

    @Test
    void aWriteLockHeldByAnotherProcessTimesOutInTheFileStage() throws Exception {
        Path lancedb = Files.createDirectories(root.resolve("lancedb"));
        try (Peer holder = Peer.flockHolder(lancedb.resolve(".lock"))) {
            LockTimeoutException e = assertThrows(LockTimeoutException.class, () -> library.writeLock(lancedb, Duration.ofMillis(200)));
            assertTrue(e.getMessage().startsWith("Timed out waiting for exclusive file lock"), e.getMessage());
        }
    }

    @Test
    void aWriterInThisProcessTimesOutInTheMutexStageAndTheFileLockIsLetGo() throws Exception {
        ReentrantLock mutex = new ReentrantLock();
        LibraryLocks locks = new LibraryLocks(locker, new SyncMark(), mutex);
        Path lancedb = root.resolve("lancedb");
        Thread holder = Thread.ofPlatform().start(mutex::lock);
        holder.join();
        LockTimeoutException e = assertThrows(LockTimeoutException.class, () -> locks.writeLock(lancedb, Duration.ofMillis(200)));
        assertEquals("Timed out waiting for write lock (another writer in this process holds it)", e.getMessage());
        assertTrue(Peer.flockCanTake(lancedb.resolve(".lock")), "the file stage's lock is released on a mutex timeout");
    }

    @Test
    void theMutexGetsAtLeastATenthOfASecondWhenTheFileStageUsedTheWholeBudget() throws Exception {
        ReentrantLock mutex = new ReentrantLock();
        LibraryLocks locks = new LibraryLocks(locker, new SyncMark(), mutex);
        java.util.concurrent.CountDownLatch held = new java.util.concurrent.CountDownLatch(1);
        Thread writer = Thread.ofPlatform().start(() -> {
            mutex.lock();
            held.countDown();
            // let go only once the lock below is waiting for the mutex: with no floor it would never wait
            Await.until("a writer waits for the mutex", mutex::hasQueuedThreads);
            mutex.unlock();
        });
        held.await();
        try (LibraryLocks.WriteHold hold = locks.writeLock(root.resolve("lancedb"), Duration.ZERO)) {
            assertTrue(mutex.isHeldByCurrentThread());
        }
        writer.join();
    }
}
