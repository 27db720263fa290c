package dev.warden.health;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.warden.config.LilbeePaths;
import dev.warden.config.WardenConfig;
import dev.warden.gate.pod.GateKeeper;
import dev.warden.gate.GateTimings;
import dev.warden.hold.LockKeeper;
import dev.warden.hold.ScopeOwnerFile;
import dev.warden.lock.FileLocker;
import dev.warden.lock.LockReach;
import dev.warden.lock.NativePosix;
import dev.warden.lock.ProcLocks;
import dev.warden.testing.Await;
import dev.warden.testing.Peer;
import dev.warden.time.MonotonicClock;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Optional;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LockStartupCheckTest {

    @TempDir
    Path dir;

    private final LockKeeper keeper = new LockKeeper(new FileLocker(new NativePosix()), new ProcLocks(),
            new ScopeOwnerFile(new ObjectMapper()), InstantSource.system(), Duration.ofMillis(50), Duration.ofMillis(100));

    /** Not started: hold mode answers. */
    private final GateKeeper gate = new GateKeeper(new GateKeeper.Edges(new FileLocker(new NativePosix()), new NativePosix(),
            new dev.warden.lock.SystemProcFs(), new ProcLocks(), MonotonicClock.SYSTEM, InstantSource.system(), Path.of("/nonexistent/switch.sock"),
            0, Duration.ofMillis(50), Duration.ofMillis(100), LockReach.Factory.system(Duration.ofMillis(250))), new GateTimings(Duration.ofSeconds(10), Duration.ofSeconds(5),
                    Duration.ofSeconds(2), Duration.ofSeconds(4), Duration.ofMinutes(1), Optional.empty()));

    @AfterEach
    void stop() {
        keeper.stop();
    }

    @Test
    void withoutRequireLockAStandbyHasStartedOnceItServes() throws Exception {
        LockStartupCheck check = new LockStartupCheck(keeper, gate, config(false));
        assertEquals(HealthCheckResponse.Status.DOWN, check.call().getStatus(), "not serving yet");
        Path data = Files.createDirectories(dir.resolve("data"));
        try (Peer holder = Peer.flockHolder(data.resolve("server.lock"))) {
            keeper.start(new LilbeePaths(dir, data, data.resolve("lancedb"), Optional.empty(), "test"), true);
            assertEquals(HealthCheckResponse.Status.UP, check.call().getStatus());
            assertEquals(HealthCheckResponse.Status.DOWN, new LockStartupCheck(keeper, gate, config(true)).call().getStatus());
            holder.kill();
            Await.until("the lock is held", () -> keeper.snapshot().allHeld());
            assertEquals(HealthCheckResponse.Status.UP, new LockStartupCheck(keeper, gate, config(true)).call().getStatus());
        }
    }

    /** A configuration whose only answer that matters here is startup.require-lock. */
    private static WardenConfig config(boolean requireLock) {
        WardenConfig.Startup startup = () -> requireLock;
        return (WardenConfig) Proxy.newProxyInstance(WardenConfig.class.getClassLoader(), new Class<?>[] {WardenConfig.class},
                (proxy, method, args) -> switch (method.getName()) {
                    case "startup" -> startup;
                    default -> throw new UnsupportedOperationException(method.getName());
                });
    }
}
