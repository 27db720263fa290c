package dev.warden.reaper;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.warden.config.LilbeePaths;
import dev.warden.hold.LockKeeper;
import dev.warden.hold.LockState;
import dev.warden.hold.ScopeOwnerFile;
import dev.warden.lock.FileLocker;
import dev.warden.lock.NativePosix;
import dev.warden.lock.ProcLocks;
import dev.warden.testing.Await;
import dev.warden.testing.FakeEngine;
import dev.warden.testing.Peer;
import dev.warden.testing.SystemReaper;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hold mode on a real kubelet restarts only warden's container, and the pod's llama-swap keeps running:
 * a warden that then stands by unloads it, once a standby; a serving warden never does.
 */
class StandbyUnloaderTest {

    @TempDir
    Path dir;

    private final LockKeeper keeper = new LockKeeper(new FileLocker(new NativePosix()), new ProcLocks(),
            new ScopeOwnerFile(new ObjectMapper()), InstantSource.system(), Duration.ofMillis(50), Duration.ofMillis(100));

    @AfterEach
    void stopKeeper() {
        keeper.stop();
    }

    @Test
    void aStandbyUnloadsItsPodsEngineOnceAndAServingWardenNever() throws Exception {
        LilbeePaths paths = new LilbeePaths(dir, dir.resolve("data"), dir.resolve("data/lancedb"), Optional.empty(), "test");
        Files.createDirectories(paths.dataDir());
        int port = FakeEngine.freePort();
        try (FakeEngine engine = FakeEngine.startLlamaSwap("--port", Integer.toString(port));
                Peer otherPod = Peer.flockHolder(paths.serverLock())) {
            AtomicInteger pagesGivenBackAfter = new AtomicInteger();
            StandbyUnloader unloader = new StandbyUnloader(keeper::snapshot, SystemReaper.client(),
                    Optional.of(URI.create("http://127.0.0.1:" + port)), true, pagesGivenBackAfter::incrementAndGet);
            assertEquals(Optional.empty(), unloader.look(), "not started: nothing to do");
            assertTrue(keeper.start(paths, true).isEmpty());
            Await.until("standing by", () -> keeper.snapshot().locks().stream()
                    .anyMatch(l -> l.state() instanceof LockState.HeldElsewhere));
            assertTrue(unloader.look().orElseThrow().unloaded());
            engine.await("unloaded");
            assertEquals(1, pagesGivenBackAfter.get(), "what the unload ran is given back after it");
            assertEquals(Optional.empty(), unloader.look(), "once a standby");
            otherPod.kill();
            Await.until("holding", () -> keeper.snapshot().allHeld());
            assertEquals(Optional.empty(), unloader.look(), "a serving warden unloads nothing");
            assertEquals(1, engine.printed().stream().filter("unloaded"::equals).count());
            assertTrue(engine.alive(), "an unload, never a signal");
            assertEquals(1, pagesGivenBackAfter.get());
        }
    }
}
