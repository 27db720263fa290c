package dev.warden.soak;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.lock.FileLocker;
import dev.warden.lock.HeldLock;
import dev.warden.lock.NativePosix;
import dev.warden.testing.FakeEngine;
import dev.warden.testing.Peer;
import dev.warden.testing.WardenProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Shutdown mid-work: SIGTERM while warden is stopping an engine, unloading one, and waiting for a
 * lock. Each time it exits 0, every lock it held is free, the scope's owner file is gone, and what
 * it was working on is either done or untouched, never half-deleted.
 */
class ShutdownSoak {

    @TempDir
    Path root;

    private final FileLocker locker = new FileLocker(new NativePosix());

    private Path engineDir() throws Exception {
        return Files.createDirectories(root.resolve("engine/engine-users")).getParent();
    }

    private Path dataLock() {
        return root.resolve("lib/data/server.lock");
    }

    private WardenProcess serve(String name, Path engineDir, String... settings) throws Exception {
        return WardenProcess.serve(name, List.of(settings), "--data-root", root.resolve("lib").toString(),
                "--scope", root.resolve("scope").toString(), "--engine-dir", engineDir.toString());
    }

    /** Each of {@code locks} is free again, and the owner file went with the scope lock. */
    private void assertReleased(List<Path> locks) throws Exception {
        for (Path lock : locks) {
            Optional<HeldLock> taken = locker.tryLock(lock);
            assertTrue(taken.isPresent(), lock + " is still held after warden exited");
            taken.get().close();
        }
        assertFalse(Files.exists(root.resolve("scope/server.scope.owner.json")), "the owner file outlived warden");
    }

    private List<Path> everyLock(Path engineDir) {
        return new ArrayList<>(List.of(dataLock(), root.resolve("scope/server.scope.lock"),
                engineDir.resolve("engine-reaper.lock"), engineDir.resolve("engine.lock")));
    }

    @Test
    void sigtermDuringAStopExitsZeroAndKeepsTheRecordOfAnEngineStillRunning() throws Exception {
        Path engineDir = engineDir();
        try (FakeEngine engine = FakeEngine.startLlamaSwap("--port", "0", "--ignore-term")) {
            Path record = engine.writeRecord(engineDir, "chat", FakeEngine.freePort(), List.of());
            // No user, so the first pass stops the engine; it ignores SIGTERM, and warden waits a minute before SIGKILL.
            try (WardenProcess warden = serve("shutdown-stop", engineDir, "-Dwarden.engine.term-timeout=60s")) {
                engine.await("ignored SIGTERM");
                assertEquals(0, warden.terminate(), warden.log());
            }
            assertTrue(engine.alive());
            assertTrue(Files.exists(record), "the engine still runs, so its record stays for the next reaper");
            assertReleased(everyLock(engineDir));
        }
    }

    @Test
    void sigtermDuringAnUnloadExitsZeroAndTouchesNeitherTheEngineNorItsFiles() throws Exception {
        Path engineDir = engineDir();
        int proxy = FakeEngine.freePort();
        try (FakeEngine engine = FakeEngine.startLlamaSwap("--port", Integer.toString(proxy), "--slow-unload", "60000")) {
            Path record = engine.writeRecord(engineDir, "chat", proxy, List.of());
            Path marker = Files.writeString(engineDir.resolve("engine-users/lilbee-1.keep-warm"), "");
            try (WardenProcess warden = serve("shutdown-unload", engineDir, "-Dwarden.reaper.idle-ttl=1s")) {
                engine.await("unloading");
                assertEquals(0, warden.terminate(), warden.log());
            }
            assertTrue(engine.alive());
            assertFalse(engine.printed().stream().anyMatch(l -> l.startsWith("term ")), "an unload never signals");
            assertTrue(Files.exists(record) && Files.exists(marker), "an unload deletes nothing");
            assertReleased(everyLock(engineDir));
        }
    }

    @Test
    void sigtermDuringALockWaitExitsZeroAndLeavesTheHoldersLockAlone() throws Exception {
        Path engineDir = engineDir();
        Files.createDirectories(dataLock().getParent());
        try (Peer lilbee = Peer.flockHolder(dataLock())) {
            try (WardenProcess warden = serve("shutdown-wait", engineDir)) {
                warden.awaitLockData("data-dir.state", "held-elsewhere");
                assertEquals(0, warden.terminate(), warden.log());
            }
            assertTrue(locker.tryLock(dataLock()).isEmpty(), "the other process still holds the data dir");
            List<Path> locks = everyLock(engineDir);
            locks.remove(dataLock());
            assertReleased(locks);
        }
    }
}
