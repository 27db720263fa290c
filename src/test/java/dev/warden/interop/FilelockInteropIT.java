package dev.warden.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.library.LibraryLocks;
import dev.warden.library.LockTimeoutException;
import dev.warden.library.ResetRefusedException;
import dev.warden.lock.FileLocker;
import dev.warden.lock.NativePosix;
import dev.warden.lock.SyncMark;
import dev.warden.testing.Peer;
import dev.warden.testing.WardenProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** warden against the real filelock package from PyPI, the library lilbee takes its locks with. */
class FilelockInteropIT {

    @TempDir
    Path root;

    private final LibraryLocks library = new LibraryLocks(new FileLocker(new NativePosix()), new SyncMark());

    @Test
    void aFilelockServerLockMakesWardenAStandbyUntilItIsReleased() throws Exception {
        Path lock = Files.createDirectories(root.resolve("data")).resolve("server.lock");
        try (Peer lilbee = Peer.filelock("file", lock, 5)) {
            lilbee.awaitLine("locked", Duration.ofSeconds(30));
            try (WardenProcess warden = WardenProcess.serve("filelock-standby", "--data-root", root.toString())) {
                warden.awaitLockData("data-dir.state", "held-elsewhere");
                assertEquals(503, warden.status("/q/health/ready"));
                lilbee.kill();
                warden.awaitStatus("/q/health/ready", 200);
            }
        }
    }

    @Test
    void filelockTimesOutOnEveryFlockWardenHolds() throws Exception {
        Path scope = root.resolve("scope");
        try (WardenProcess warden = WardenProcess.serve("filelock-refused", "--data-root", root.toString(),
                "--scope", scope.toString())) {
            warden.awaitStatus("/q/health/ready", 200);
            for (Path lock : new Path[] {root.resolve("data/server.lock"), scope.resolve("server.scope.lock")}) {
                try (Peer lilbee = Peer.filelock("file", lock, 0.2)) {
                    lilbee.awaitLine("timeout", Duration.ofSeconds(30));
                    assertTrue(lilbee.process().waitFor(30, TimeUnit.SECONDS));
                    assertEquals(3, lilbee.process().exitValue(), "filelock must time out on " + lock);
                }
            }
        }
        try (Peer lilbee = Peer.filelock("file", root.resolve("data/server.lock"), 5)) {
            lilbee.awaitLine("locked", Duration.ofSeconds(30));
        }
    }

    @Test
    void theLancedbWriteLockExcludesFilelockBothWays() throws Exception {
        Path lancedb = root.resolve("data/lancedb");
        try (LibraryLocks.WriteHold hold = library.writeLock(lancedb, Duration.ofSeconds(1));
                Peer lilbee = Peer.filelock("file", lancedb.resolve(".lock"), 0.2)) {
            lilbee.awaitLine("timeout", Duration.ofSeconds(30));
        }
        try (Peer lilbee = Peer.filelock("file", lancedb.resolve(".lock"), 5)) {
            lilbee.awaitLine("locked", Duration.ofSeconds(30));
            LockTimeoutException e = org.junit.jupiter.api.Assertions.assertThrows(LockTimeoutException.class,
                    () -> library.writeLock(lancedb, Duration.ofMillis(200)));
            assertTrue(e.getMessage().startsWith("Timed out waiting for exclusive file lock"), e.getMessage());
        }
    }

    @Test
    void aFilelockSyncRefusesAJavaResetAndAJavaSyncRefusesAFilelockReset() throws Exception {
        Path sync = root.resolve("sync.lock");
        try (Peer lilbee = Peer.filelock("read", sync, 5)) {
            lilbee.awaitLine("locked", Duration.ofSeconds(30));
            ResetRefusedException e = org.junit.jupiter.api.Assertions.assertThrows(ResetRefusedException.class,
                    () -> library.noSyncRunning(root));
            assertEquals("A sync, an import, an add or a wiki build is running on this library. Reset again when it finishes.", e.getMessage());
        }
        try (SyncMark.Held mark = library.syncRunning(root, Duration.ofSeconds(1));
                Peer lilbee = Peer.filelock("write", sync, 0)) {
            lilbee.awaitLine("timeout", Duration.ofSeconds(30));
        }
    }

    @Test
    void aJavaResetMakesAFilelockSyncWait() throws Exception {
        Path sync = root.resolve("sync.lock");
        SyncMark.Held reset = library.noSyncRunning(root);
        try (Peer lilbee = Peer.filelock("read", sync, 30)) {
            lilbee.awaitLine("trying", Duration.ofSeconds(30));
            assertFalse(lilbee.process().waitFor(300, TimeUnit.MILLISECONDS), "the sync waits rather than failing");
            reset.close();
            lilbee.awaitLine("locked", Duration.ofSeconds(30));
        } finally {
            reset.close();
        }
    }
}
