package dev.warden.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.warden.lock.FileLocker;
import dev.warden.lock.NativePosix;
import dev.warden.lock.ProcLocks;
import dev.warden.testing.FakeEngine;
import dev.warden.testing.Peer;
import dev.warden.testing.SystemReaper;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code engine stop|unload} over all of lilbee's engine dirs for a data root, as {@code lilbee engine stop} covers them. */
class EngineActionsTest {

    private static final Duration WAIT = Duration.ofSeconds(20);

    @TempDir
    Path dir;

    private EngineDirs dirs;

    @BeforeEach
    void layout() {
        dirs = EngineDirs.of(dir.resolve("slot"), dir.resolve("root"), dir.resolve("root/data"));
    }

    private EngineActions actions(Duration buildLockWait, Optional<URI> external) {
        FileLocker locker = new FileLocker(new NativePosix());
        return new EngineActions(locker, new ProcLocks(), new EngineRecords(new ObjectMapper()),
                SystemReaper.stopper(Duration.ofSeconds(5)), new EngineIdentity(new ProcessTable()), SystemReaper.client(),
                buildLockWait, external);
    }

    @Test
    void theDirsAreTheSlotTheOverflowDirAndTheDataDirEachOnce() {
        assertEquals(List.of("slot", "overflow", "legacy"), dirs.entries().stream().map(EngineDirs.Entry::role).toList());
        assertEquals(dir.resolve("root/data/engine"), dirs.entries().get(1).dir().root());
        EngineDirs same = EngineDirs.of(dir.resolve("root/data/engine"), dir.resolve("root"), dir.resolve("root/data"));
        assertEquals(List.of("slot", "legacy"), same.entries().stream().map(EngineDirs.Entry::role).toList(),
                "a slot that is the overflow dir is looked at once");
    }

    @Test
    void stopStopsAnEngineInTheOverflowDirAndLocksNothingWhereNothingIsRecorded() throws Exception {
        Path overflow = Files.createDirectories(dir.resolve("root/data/engine"));
        try (FakeEngine llamaSwap = FakeEngine.startLlamaSwap("--port", "0")) {
            llamaSwap.writeRecord(overflow, "chat", FakeEngine.freePort(), List.of());
            List<String> done = actions(Duration.ofSeconds(1), Optional.empty()).stop(dirs);
            assertEquals(143, llamaSwap.exitCode(WAIT), done.toString());
            assertTrue(done.stream().anyMatch(d -> d.contains("no engine is recorded in " + dir.resolve("slot"))), done.toString());
            assertFalse(Files.exists(dir.resolve("root/data/engine.lock")), "nothing is recorded in the data dir: no build lock file is made there");
        }
    }

    @Test
    void aBusyBuildLockInOneDirDoesNotKeepTheOthersFromBeingStopped() throws Exception {
        Path overflow = Files.createDirectories(dir.resolve("root/data/engine"));
        Files.createDirectories(dir.resolve("slot"));
        try (FakeEngine llamaSwap = FakeEngine.startLlamaSwap("--port", "0");
                Peer build = Peer.flockHolder(dir.resolve("slot").resolve(EngineDir.BUILD_LOCK))) {
            llamaSwap.writeRecord(overflow, "chat", FakeEngine.freePort(), List.of());
            EngineActions.BuildLockBusy busy = assertThrows(EngineActions.BuildLockBusy.class,
                    () -> actions(Duration.ofMillis(200), Optional.empty()).stop(dirs));
            assertTrue(busy.getMessage().contains(dir.resolve("slot").resolve(EngineDir.BUILD_LOCK).toString()), busy.getMessage());
            assertTrue(busy.getMessage().contains("stopped"), busy.getMessage());
            assertEquals(143, llamaSwap.exitCode(WAIT));
        }
    }

    @Test
    void unloadReachesAConfiguredEngineOnceWhateverTheNumberOfDirs() throws Exception {
        Files.createDirectories(dir.resolve("root/data/engine"));
        Files.createDirectories(dir.resolve("root/data"));
        int port = FakeEngine.freePort();
        try (FakeEngine llamaSwap = FakeEngine.startLlamaSwap("--port", Integer.toString(port))) {
            List<EngineClient.UnloadResult> results = actions(Duration.ofSeconds(1), Optional.of(EngineClient.loopback(port)))
                    .unload(dirs);
            assertEquals(1, results.size(), results.toString());
            assertTrue(results.getFirst().unloaded(), results.toString());
        }
    }
}
