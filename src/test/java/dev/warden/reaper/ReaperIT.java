package dev.warden.reaper;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.warden.testing.Await;
import dev.warden.testing.FakeEngine;
import dev.warden.testing.KernelLocks;
import dev.warden.testing.Peer;
import dev.warden.testing.WardenProcess;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import java.util.Map;
import dev.warden.testing.PromText;

/** The packaged warden's reaper, scheduled as it runs in a pod, against fake engines and lock peers. */
class ReaperIT {

    @TempDir
    Path dir;

    private Path engineDir() throws Exception {
        return Files.createDirectories(dir.resolve("engine/engine-users"));
    }

    @Test
    void servingWardenStopsTheEngineOnceItsLastUserIsKilled() throws Exception {
        Path engine = engineDir().getParent();
        int proxy = FakeEngine.freePort();
        try (FakeEngine llamaSwap = FakeEngine.startLlamaSwap("--port", Integer.toString(proxy));
                Peer user = Peer.flockHolder(engine.resolve("engine-users/lilbee-1.lock"));
                WardenProcess warden = WardenProcess.serve("reaper", "--data-root", dir.resolve("root").toString(),
                        "--engine-dir", engine.toString())) {
            Path record = llamaSwap.writeRecord(engine, "chat", proxy, List.of());
            warden.awaitStatus("/q/health/ready", 200);
            JsonNode status = warden.awaitReaper();
            assertEquals("yes", status.at("/engines/0/records/0/ours").asText(), status.toString());
            assertTrue(status.at("/engines/0/records/0/answers").asBoolean());
            assertEquals("lilbee-1", status.at("/engines/0/live_users/0").asText());
            assertTrue(status.at("/reaper/watching").asBoolean(), status.toString());

            user.kill();
            assertEquals(143, llamaSwap.exitCode(Duration.ofSeconds(20)), warden.log());
            Await.until("the record is gone", () -> !Files.exists(record));
            Await.until("status shows the stop", () -> {
                try {
                    return "stopped".equals(warden.json("/api/v1/status").at("/reaper/last_action/action").asText());
                } catch (Exception e) {
                    return false;
                }
            });
            String metrics = warden.text("/q/metrics");
            assertEquals(1.0, PromText.value(metrics, "warden_reaper_passes_total", Map.of("action", "stopped")).orElseThrow(),
                    metrics);
            assertEquals(1.0, PromText.value(metrics, "warden_reaper_watching").orElseThrow(), metrics);
            assertEquals(0.0, PromText.value(metrics, "warden_reaper_pass_failures_total").orElseThrow(), metrics);
            assertEquals(0.0, PromText.value(metrics, "warden_engine_unused_seconds").orElseThrow(), "stopped: none held");
        }
    }

    @Test
    void theLastUsersExitIsNoticedAtOnceNotAtTheNextTick() throws Exception {
        Path engine = engineDir().getParent();
        try (FakeEngine llamaSwap = FakeEngine.startLlamaSwap("--port", "0");
                Peer user = Peer.flockHolder(engine.resolve("engine-users/lilbee-1.lock"))) {
            llamaSwap.writeRecord(engine, "chat", FakeEngine.freePort(), List.of());
            // With a pass an hour apart, only the wake-up on the user's exit can stop the engine in time.
            try (WardenProcess warden = WardenProcess.serve("user-watch", List.of("-Dwarden.reaper.interval=1h"),
                    "--data-root", dir.resolve("root").toString(), "--engine-dir", engine.toString())) {
                warden.awaitJson("/api/v1/status", "/reaper/last_pass/action", a -> "users-live".equals(a.asText()));
                user.kill();
                assertEquals(143, llamaSwap.exitCode(Duration.ofSeconds(20)), warden.log());
            }
        }
    }

    @Test
    void aUserWhoJoinsAndDiesBetweenPassesIsNoticedWhenItDies() throws Exception {
        // As lilbee builds: the engine and its record, then its users dir and its user lock.
        aUserWhoArrivesBetweenPassesIsWatched("new-user-watch",
                engine -> Peer.flockHolder(Files.createDirectories(engine.resolve("engine-users")).resolve("lilbee-1.lock")));
    }

    /**
     * A users dir that appears with its user's lock already in it (moved into place whole) raised no event for the
     * lock: warden finds the lock when it starts watching the dir. Without that it waited for the next pass, an hour.
     */
    @Test
    void aUsersDirThatAppearsWithItsLockAlreadyInItIsWatched() throws Exception {
        aUserWhoArrivesBetweenPassesIsWatched("users-dir-moved-in", engine -> {
            Path staged = Files.createDirectories(dir.resolve("staged/engine-users"));
            Peer user = Peer.flockHolder(staged.resolve("lilbee-1.lock"));
            Files.move(staged, engine.resolve("engine-users"));
            return user;
        });
    }

    /** How a user's lock comes to be at engine-users/lilbee-1.lock of {@code engine}, held by the peer returned. */
    private interface Arrival {
        Peer arrive(Path engine) throws Exception;
    }

    /**
     * With no pass due (the first finds nothing to do, the next is an hour away), an engine recorded and then a user
     * {@code arriving}: warden waits in the kernel on the user's lock, and stops the engine when the user dies.
     */
    private void aUserWhoArrivesBetweenPassesIsWatched(String name, Arrival arriving) throws Exception {
        Path engine = Files.createDirectories(dir.resolve("engine"));
        try (WardenProcess warden = WardenProcess.serve(name, List.of("-Dwarden.reaper.interval=1h"),
                "--data-root", dir.resolve("root").toString(), "--engine-dir", engine.toString())) {
            warden.awaitJson("/api/v1/status", "/reaper/last_pass/action", a -> "nothing-to-do".equals(a.asText()));
            try (FakeEngine llamaSwap = FakeEngine.startLlamaSwap("--port", "0")) {
                llamaSwap.writeRecord(engine, "chat", FakeEngine.freePort(), List.of());
                try (Peer user = arriving.arrive(engine)) {
                    Path userLock = engine.resolve("engine-users/lilbee-1.lock");
                    Await.until("warden waits in the kernel for the user", () -> KernelLocks.blockedWaiters(userLock) > 0);
                    user.kill();
                    assertEquals(143, llamaSwap.exitCode(Duration.ofSeconds(20)), warden.log());
                }
            }
        }
    }

    /** A reaper that cannot claim its engine dir counts each failed try, which the WardenReaperFailing alert reads. */
    @Test
    void aReaperThatCannotUseItsEngineDirCountsItsFailures() throws Exception {
        Path notADir = Files.writeString(dir.resolve("engine"), "a file where the volume should be");
        try (WardenProcess warden = WardenProcess.serve("reaper-failing", "--data-root", dir.resolve("root").toString(),
                "--engine-dir", notADir.resolve("engine").toString())) {
            warden.awaitStatus("/q/health/started", 200);
            Await.until("two failed claims counted", () -> {
                try {
                    return PromText.value(warden.text("/q/metrics"), "warden_reaper_pass_failures_total").orElse(0) >= 2;
                } catch (Exception e) {
                    return false;
                }
            });
            assertEquals(0.0, PromText.value(warden.text("/q/metrics"), "warden_reaper_watching").orElseThrow());
        }
    }

    @Test
    void anEngineOrphanedBeforeWardenStartedIsStoppedAtStart() throws Exception {
        Path engine = engineDir().getParent();
        try (FakeEngine llamaSwap = FakeEngine.startLlamaSwap("--port", "0")) {
            llamaSwap.writeRecord(engine, "chat", FakeEngine.freePort(), List.of());
            try (WardenProcess warden = WardenProcess.serve("orphan-at-start", List.of("-Dwarden.reaper.interval=1h"),
                    "--data-root", dir.resolve("root").toString(), "--engine-dir", engine.toString())) {
                assertEquals(143, llamaSwap.exitCode(Duration.ofSeconds(20)), warden.log());
            }
        }
    }

    @Test
    void anotherReaperHoldingTheReaperLockKeepsWardenFromActingUntilItExits() throws Exception {
        Path engine = engineDir().getParent();
        try (FakeEngine llamaSwap = FakeEngine.startLlamaSwap("--port", "0");
                Peer otherReaper = Peer.flockHolder(engine.resolve("engine-reaper.lock"));
                WardenProcess warden = WardenProcess.serve("standby-reaper", "--data-root", dir.resolve("root").toString(),
                        "--engine-dir", engine.toString())) {
            llamaSwap.writeRecord(engine, "chat", FakeEngine.freePort(), List.of());
            JsonNode status = warden.awaitReaper();
            assertFalse(status.at("/reaper/watching").asBoolean(), status.toString());
            assertTrue(status.at("/reaper/detail").asText().startsWith("another reaper holds"), status.toString());
            assertTrue(llamaSwap.alive());

            otherReaper.kill();
            assertEquals(143, llamaSwap.exitCode(Duration.ofSeconds(20)), warden.log());
        }
    }

    @Test
    void readinessIsDownWhileTheRecordedEngineDoesNotAnswer() throws Exception {
        Path engine = engineDir().getParent();
        int proxy = FakeEngine.freePort();
        try (FakeEngine llamaSwap = FakeEngine.startLlamaSwap("--port", "0");
                Peer user = Peer.flockHolder(engine.resolve("engine-users/lilbee-1.lock"));
                WardenProcess warden = WardenProcess.serve("engine-ready", "--data-root", dir.resolve("root").toString(),
                        "--engine-dir", engine.toString())) {
            llamaSwap.writeRecord(engine, "chat", proxy, List.of());
            warden.awaitStatus("/q/health/live", 200);
            Await.until("the engine check is DOWN", () -> {
                try {
                    for (JsonNode check : warden.json("/q/health/ready").get("checks")) {
                        if ("engine".equals(check.get("name").asText())) {
                            return "DOWN".equals(check.get("status").asText()) && check.at("/data/expected").asBoolean();
                        }
                    }
                } catch (Exception e) {
                    return false;
                }
                return false;
            });
            assertEquals(503, warden.status("/q/health/ready"));
            assertEquals(200, warden.status("/q/health/live"), "liveness never depends on the engine");
        }
    }

    @Test
    void engineActionsOverHttpNeedTheBearerToken() throws Exception {
        Path engine = engineDir().getParent();
        int proxy = FakeEngine.freePort();
        // llama-swap with apiKeys: warden's key comes from a mounted Secret's file, not the environment
        try (FakeEngine llamaSwap = FakeEngine.startLlamaSwap("--port", Integer.toString(proxy), "--api-key", "engine-k3y");
                Peer user = Peer.flockHolder(engine.resolve("engine-users/lilbee-1.lock"))) {
            llamaSwap.writeRecord(engine, "chat", proxy, List.of());
            Path engineKey = Files.writeString(dir.resolve("engine-api-key"), "engine-k3y\n");
            try (WardenProcess open = WardenProcess.serve("no-token", "--data-root", dir.resolve("a").toString(),
                    "--engine-dir", engine.toString())) {
                open.awaitReaper();
                HttpResponse<String> refused = open.post("/api/v1/engine/stop", "anything");
                assertEquals(403, refused.statusCode());
                assertTrue(refused.body().contains("set warden.api.token"), refused.body());
            }
            Path tokenFile = Files.writeString(dir.resolve("token"), "s3cret\n");
            try (WardenProcess guarded = WardenProcess.serve("token", List.of("-Dwarden.api.token-file=" + tokenFile,
                    "-Dwarden.engine.api-key-file=" + engineKey),
                    "--data-root", dir.resolve("b").toString(), "--engine-dir", engine.toString())) {
                guarded.awaitReaper();
                HttpResponse<String> unasked = guarded.get("/api/v1/status", null);
                assertEquals(401, unasked.statusCode(), "with a token set the status needs it, on loopback too");
                assertEquals("{\"error\":\"warden.api.token is set: send Authorization: Bearer <warden.api.token>.\"}", unasked.body(),
                        "nothing but the refusal");
                assertEquals(401, guarded.get("/api/v1/status", "s3cre").statusCode());
                assertEquals(401, guarded.post("/api/v1/engine/unload", null).statusCode());
                assertEquals(401, guarded.post("/api/v1/engine/unload", "s3cre").statusCode());
                HttpResponse<String> unloaded = guarded.post("/api/v1/engine/unload", "s3cret");
                assertEquals(200, unloaded.statusCode(), unloaded.body());
                llamaSwap.await("unloaded");
                HttpResponse<String> stopped = guarded.post("/api/v1/engine/stop", "s3cret");
                assertEquals(200, stopped.statusCode(), stopped.body());
                assertEquals(143, llamaSwap.exitCode(Duration.ofSeconds(20)), "a manual stop acts even with users");
            }
        }
    }

    @Test
    void theCommandLineReapsOnceAndActsOnTheEngine() throws Exception {
        Path engine = engineDir().getParent();
        int proxy = FakeEngine.freePort();
        try (FakeEngine llamaSwap = FakeEngine.startLlamaSwap("--port", Integer.toString(proxy), "--old-api")) {
            llamaSwap.writeRecord(engine, "chat", proxy, List.of());
            WardenProcess.Result dry = WardenProcess.run("reap", "--once", "--dry-run", "--engine-dir", engine.toString());
            assertEquals(0, dry.exitCode(), dry.stderr());
            assertTrue(dry.stdout().startsWith("dry run: stopped (slot engine dir " + engine.toRealPath() + "): would stop 1 engine(s)"),
                    dry.stdout());
            assertTrue(llamaSwap.alive());

            WardenProcess.Result status = WardenProcess.run("status", "--json", "--data-root", dir.resolve("r").toString(),
                    "--engine-dir", engine.toString());
            JsonNode json = new ObjectMapper().readTree(status.stdout());
            assertEquals(llamaSwap.pid(), json.at("/engines/0/records/0/pid").asLong());
            assertTrue(json.at("/engines/0/records/0/answers").asBoolean());

            WardenProcess.Result unload = WardenProcess.run("engine", "unload", "--engine-dir", engine.toString());
            assertEquals(0, unload.exitCode(), unload.stdout() + unload.stderr());
            llamaSwap.await("unloaded via GET /unload");

            WardenProcess.Result once = WardenProcess.run("reap", "--once", "--engine-dir", engine.toString());
            assertEquals(0, once.exitCode(), once.stderr());
            assertTrue(once.stdout().startsWith("stopped (slot engine dir " + engine.toRealPath() + "): every user is gone"),
                    once.stdout());
            assertEquals(143, llamaSwap.exitCode(Duration.ofSeconds(20)));
        }
    }

    @Test
    void aManualStopWaitsForTheBuildLockAndSaysSoWhenItStaysHeld() throws Exception {
        Path engine = engineDir().getParent();
        try (Peer build = Peer.flockHolder(engine.resolve("engine.lock"))) {
            WardenProcess.Result result = WardenProcess.run(java.util.Map.of("WARDEN_ENGINE_BUILD_LOCK_WAIT", "300ms"),
                    "engine", "stop", "--engine-dir", engine.toString());
            assertEquals(3, result.exitCode(), result.stderr());
            assertTrue(result.stderr().contains("stayed held by pid " + build.pid()), result.stderr());
        }
    }

    /**
     * A neighbour replaces the reaper lock's file: warden lets go of the old one and claims the new,
     * so no second reaper (lilbee's own, say) can take the dir while warden still thinks it holds it.
     */
    @Test
    void aReaperLockFileReplacedUnderWardenIsClaimedAgain() throws Exception {
        Path engine = engineDir().getParent();
        try (WardenProcess warden = WardenProcess.serve("reaper-lock-replaced", "--data-root", dir.resolve("root").toString(),
                "--engine-dir", engine.toString())) {
            warden.awaitJson("/api/v1/status", "/reaper/watching", JsonNode::asBoolean);
            Path lock = engine.resolve("engine-reaper.lock");
            assertTrue(KernelLocks.flockHolders(lock).contains(warden.pid()));
            Files.delete(lock);
            Files.writeString(lock, "");
            Await.until("warden holds the new reaper lock file", () -> KernelLocks.flockHolders(lock).contains(warden.pid()));
            assertTrue(warden.log().contains("The reaper lock " + lock.toRealPath() + " was deleted or replaced; claiming it again"),
                    warden.log());
        }
    }
}
