package dev.warden.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.warden.engine.EngineDir;
import dev.warden.engine.EngineUsers;
import dev.warden.lock.FileLocker;
import dev.warden.lock.NativePosix;
import dev.warden.testing.Await;
import dev.warden.testing.FakeEngine;
import dev.warden.testing.Peer;
import dev.warden.testing.WardenProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * warden against real lilbee from PyPI: the engine-dir functions of lilbee.runtime.engine_lock
 * (its user lock, its live-users probe, its build lock, its reaper lock, its keep-warm markers)
 * and lilbee's own reaper process, each on the same files as warden.
 */
class LilbeeInteropIT {

    private static final Duration WAIT = Duration.ofSeconds(30);

    @TempDir
    Path root;

    private Path engine;
    private final FileLocker locker = new FileLocker(new NativePosix());

    @BeforeEach
    void engineDir() throws Exception {
        engine = Files.createDirectories(root.resolve("engine"));
    }

    /** Runs a lilbee command that prints one line and ends; returns the line. */
    private String ask(String command, String... args) throws Exception {
        return ask(command, engine, args);
    }

    /** The same, on {@code engineDir}. */
    private String ask(String command, Path engineDir, String... args) throws Exception {
        try (Peer lilbee = Peer.lilbee(command, engineDir, args)) {
            String line = new String(lilbee.process().getInputStream().readAllBytes()).trim();
            assertTrue(lilbee.process().waitFor(30, TimeUnit.SECONDS));
            assertEquals(0, lilbee.process().exitValue(), "lilbee " + command + ": " + line);
            return line;
        }
    }

    private WardenProcess serve(String name) throws Exception {
        return WardenProcess.serve(name, "--data-root", root.resolve("lib").toString(), "--engine-dir", engine.toString());
    }

    @Test
    void lilbeeNamesItsFilesAsWardenDoes() throws Exception {
        assertEquals("engine-reaper.lock " + EngineDir.BUILD_LOCK + " " + EngineDir.USERS, ask("names"),
                "warden.reaper.lock-name's default must be lilbee's reaper lock");
    }

    @Test
    void aServingWardenIsTheReaperLilbeeSeesAndStopsBeingItOnExit() throws Exception {
        try (WardenProcess warden = serve("lilbee-reaper-seen")) {
            warden.awaitReaper();
            assertEquals("True", ask("reaper-running"));
            assertEquals(0, warden.terminate());
        }
        assertEquals("False", ask("reaper-running"));
    }

    @Test
    void lilbeesOwnReaperMakesWardenStandByUntilItExits() throws Exception {
        try (Peer user = Peer.lilbee("hold-user", engine)) {
            user.awaitLine("held", WAIT);
            // Started only now: lilbee's reaper with no live user would go straight to stopping the engine.
            try (Peer reaper = Peer.lilbee("reaper", engine)) {
                Await.until("lilbee's reaper holds its lock", () -> {
                    try {
                        return "True".equals(ask("reaper-running"));
                    } catch (Exception e) {
                        return false;
                    }
                });
                try (WardenProcess warden = serve("lilbee-reaper-first")) {
                    JsonNode status = warden.awaitJson("/api/v1/status", "/reaper/detail",
                            d -> d.asText().startsWith("another reaper holds"));
                    assertTrue(status.at("/reaper/detail").asText().contains("engine-reaper.lock"), status.toString());
                    reaper.kill();
                    warden.awaitJson("/api/v1/status", "/reaper/watching", JsonNode::asBoolean);
                }
            }
        }
    }

    @Test
    void aLilbeeUserKeepsTheEngineAndItsDeathGetsItStopped() throws Exception {
        try (FakeEngine llamaSwap = FakeEngine.startLlamaSwap("--port", "0");
                Peer user = Peer.lilbee("hold-user", engine)) {
            user.awaitLine("held", WAIT);
            llamaSwap.writeRecord(engine, "chat", FakeEngine.freePort(), List.of());
            try (WardenProcess warden = serve("lilbee-user")) {
                JsonNode status = warden.awaitJson("/api/v1/status", "/reaper/last_pass/action",
                        a -> "users-live".equals(a.asText()));
                assertEquals(Long.toString(user.pid()), status.at("/engines/0/live_users/0").asText(), status.toString());
                user.kill();
                assertEquals(143, llamaSwap.exitCode(WAIT), warden.log());
            }
        }
    }

    /**
     * lilbee builds in {@code <data root>/data/engine} when the machine slot holds an incompatible
     * engine: warden watches that dir too, from the data root alone.
     */
    @Test
    void anEngineInTheOverflowDirIsStoppedWhenItsLastLilbeeUserDies() throws Exception {
        Path lib = root.resolve("lib");
        Path overflow = Files.createDirectories(lib.resolve("data/engine"));
        try (FakeEngine llamaSwap = FakeEngine.startLlamaSwap("--port", "0");
                Peer user = Peer.lilbee("hold-user", overflow)) {
            user.awaitLine("held", WAIT);
            llamaSwap.writeRecord(overflow, "chat", FakeEngine.freePort(), List.of());
            try (WardenProcess warden = WardenProcess.serve("lilbee-overflow", "--data-root", lib.toString())) {
                JsonNode status = warden.awaitJson("/api/v1/status", "/reaper/dirs/1/last_pass/action",
                        a -> "users-live".equals(a.asText()));
                assertEquals("overflow", status.at("/engines/1/role").asText(), status.toString());
                assertEquals(overflow.toRealPath().toString(), status.at("/engines/1/dir").asText(), status.toString());
                assertEquals(Long.toString(user.pid()), status.at("/engines/1/live_users/0").asText(), status.toString());
                assertEquals("True", ask("reaper-running", overflow), "lilbee sees warden as the overflow dir's reaper");
                user.kill();
                assertEquals(143, llamaSwap.exitCode(WAIT), warden.log());
                warden.awaitJson("/api/v1/status", "/reaper/dirs/1/last_action/action", a -> "stopped".equals(a.asText()));
            }
        }
    }

    @Test
    void wardenAsAUserIsALiveUserToLilbee() throws Exception {
        EngineDir dir = new EngineDir(engine);
        try (AutoCloseable joined = new EngineUsers(locker).join(dir, "warden-exec")) {
            assertEquals("True", ask("live-users"));
            assertTrue(Files.exists(dir.userLock("warden-exec")), "lilbee's probe leaves a live user's file alone");
        }
        assertEquals("False", ask("live-users"));
    }

    @Test
    void lilbeesBuildLockIsWardensBuildLock() throws Exception {
        EngineDir dir = new EngineDir(engine);
        try (Peer build = Peer.lilbee("build-lock", engine)) {
            build.awaitLine("locked", WAIT);
            assertTrue(locker.tryLock(dir.buildLock()).isEmpty(), "warden must see lilbee's build under way");
        }
        var taken = locker.tryLock(dir.buildLock());
        assertTrue(taken.isPresent());
        taken.get().close();
    }

    @Test
    void lilbeesKeepWarmMarkerKeepsTheEngineWarmForTheMinutesItNames() throws Exception {
        String marker = ask("keep-warm", root.resolve("lilbee-config").toString());
        assertTrue(marker.matches("[0-9a-f]{16}\\.keep-warm"), marker);
        EngineDir dir = new EngineDir(engine);
        assertEquals(List.of(dir.usersDir().resolve(marker)), dir.keepWarmMarkers());
        assertEquals(Optional.of(Duration.ofMinutes(1)), dir.keepWarmIdle(Duration.ofMinutes(5)));
    }
}
