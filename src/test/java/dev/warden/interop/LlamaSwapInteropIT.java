package dev.warden.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.warden.engine.EngineClient;
import dev.warden.engine.EngineDir;
import dev.warden.engine.ProcessInfo;
import dev.warden.engine.ProcessTable;
import dev.warden.reaper.PassOutcome;
import dev.warden.reaper.Reaper;
import dev.warden.testing.Await;
import dev.warden.testing.FakeEngine;
import dev.warden.testing.Peer;
import dev.warden.testing.SystemReaper;
import dev.warden.testing.WardenProcess;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * warden against a real llama-swap (v250, built by .ci/run from its source) whose model command is a
 * fake llama-server: warden reads {@code /running}, unloads the weights, stops the fleet, reaps the
 * llama-server a SIGKILLed llama-swap left behind, and, serving, applies the last-user-out rule to it
 * end to end.
 */
class LlamaSwapInteropIT {

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    @TempDir
    Path root;

    private String binary;
    private EngineDir dir;
    private final ProcessTable processes = new ProcessTable();
    private final EngineClient client = new EngineClient(new ObjectMapper(), Duration.ofMillis(500), Duration.ofSeconds(5),
            Duration.ofSeconds(30), Optional.empty());
    private final List<Process> started = new ArrayList<>();
    private int proxy;
    private int member;

    @BeforeEach
    void llamaSwap() throws Exception {
        binary = System.getProperty("warden.interop.llama-swap", "");
        if (binary.isEmpty()) {
            String why = "no llama-swap: run with -Pinterop -Dinterop.llama-swap=<binary>, as .ci/run does (it builds"
                    + " llama-swap v250 from ../shared/peers)" + System.getProperty("warden.interop.llama-swap-missing", "");
            System.err.println("SKIPPED: " + why);
            Assumptions.abort(why);
        }
        dir = new EngineDir(Files.createDirectories(root.resolve("engine/engine-users")).getParent());
        proxy = FakeEngine.freePort();
        member = FakeEngine.freePort();
        Path server = root.resolve("llama-server");
        Files.writeString(server, "#!/usr/bin/env bash\nexec -a llama-server '" + ProcessHandle.current().info().command().orElse("java")
                + "' -Xmx24m -XX:TieredStopAtLevel=1 -cp '" + System.getProperty("java.class.path")
                + "' dev.warden.testing.FakeLlamaServer \"$@\"\n");
        Files.setPosixFilePermissions(server, PosixFilePermissions.fromString("rwxr-xr-x"));
        Files.writeString(root.resolve("config.yaml"), "healthCheckTimeout: 60\nstartPort: " + member + "\nmodels:\n"
                + "  fake:\n    cmd: " + server + " --port ${PORT}\n    proxy: http://127.0.0.1:${PORT}\n"
                + "    checkEndpoint: /health\n");
    }

    @AfterEach
    void cleanUp() {
        for (Process process : started) {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
        }
        processes.all().stream().filter(p -> p.isLlamaServer() && p.port().orElse(-1) == member)
                .forEach(p -> ProcessHandle.of(p.pid()).ifPresent(ProcessHandle::destroyForcibly));
    }

    /** llama-swap in a session of its own, as lilbee starts it; returns once it answers. */
    private Process start() throws Exception {
        Process process = new ProcessBuilder("setsid", "bash", "-c", "exec -a llama-swap \"$0\" \"$@\"", binary,
                "--config", root.resolve("config.yaml").toString(), "--listen", "127.0.0.1:" + proxy)
                .redirectErrorStream(true).redirectOutput(root.resolve("llama-swap.log").toFile()).start();
        started.add(process);
        Await.until("llama-swap answers /running", () -> client.answers(EngineClient.Endpoint.configured(EngineClient.loopback(proxy))));
        return process;
    }

    /** A request through llama-swap to the model, which makes llama-swap start its llama-server. */
    private void load() throws Exception {
        HttpResponse<String> health = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + proxy + "/upstream/fake/health"))
                .timeout(Duration.ofSeconds(90)).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, health.statusCode(), health.body() + "\n" + Files.readString(root.resolve("llama-swap.log")));
        assertTrue(running().contains("fake"), running());
    }

    private String running() throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + proxy + "/running")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
    }

    private Optional<ProcessInfo> llamaServer() {
        return processes.all().stream().filter(p -> p.isLlamaServer() && p.port().orElse(-1) == member).findFirst();
    }

    private void record(Process llamaSwap) throws Exception {
        double created = FakeEngine.createdAt(llamaSwap.pid());
        Files.writeString(dir.root().resolve("llama-swap.state.chat." + llamaSwap.pid() + ".json"), String.format(Locale.ROOT,
                "{\"pid\": %d, \"pgid\": %d, \"created_at\": %.3f, \"name\": \"llama-swap\", \"member_ports\": [%d],"
                        + " \"proxy_port\": %d, \"launches\": 1}", llamaSwap.pid(), llamaSwap.pid(), created, member, proxy));
    }

    private Reaper reaper() {
        // llama-swap's own backstop for stopping its servers is 35 s: give it that before SIGKILL.
        return SystemReaper.of(dir, Duration.ofSeconds(35));
    }

    @Test
    void wardenUnloadsTheWeightsOfARealLlamaSwap() throws Exception {
        start();
        load();
        EngineClient.UnloadResult unload = client.unload(EngineClient.Endpoint.configured(EngineClient.loopback(proxy)));
        assertTrue(unload.unloaded(), unload.detail());
        Await.until("/running is empty", () -> {
            try {
                return !running().contains("fake");
            } catch (Exception e) {
                return false;
            }
        });
        Await.until("the llama-server has exited", () -> llamaServer().isEmpty());
    }

    @Test
    void wardenStopsARealLlamaSwapAndItsLlamaServer() throws Exception {
        Process llamaSwap = start();
        load();
        assertTrue(llamaServer().isPresent());
        record(llamaSwap);
        assertEquals(PassOutcome.Action.STOPPED, reaper().pass().action());
        assertTrue(llamaSwap.waitFor(40, java.util.concurrent.TimeUnit.SECONDS), "llama-swap is gone");
        Await.until("its llama-server is gone", () -> llamaServer().isEmpty());
    }

    @Test
    void wardenReapsTheLlamaServerOfASigkilledLlamaSwap() throws Exception {
        Process llamaSwap = start();
        load();
        long server = llamaServer().orElseThrow().pid();
        record(llamaSwap);
        llamaSwap.destroyForcibly().waitFor();
        assertTrue(ProcessHandle.of(server).map(ProcessHandle::isAlive).orElse(false),
                "the orphaned llama-server keeps its port and memory");
        assertEquals(PassOutcome.Action.STOPPED, reaper().pass().action());
        Await.until("the orphan is reaped", () -> ProcessHandle.of(server).map(h -> !h.isAlive()).orElse(true));
    }

    @Test
    void aServingWardenStopsARealLlamaSwapWhenItsLastUserDies() throws Exception {
        Process llamaSwap = start();
        load();
        long server = llamaServer().orElseThrow().pid();
        record(llamaSwap);
        try (Peer user = Peer.flockHolder(dir.userLock("lilbee-1"));
                WardenProcess warden = WardenProcess.serve("llama-swap-last-out", "--data-root", root.resolve("lib").toString(),
                        "--engine-dir", dir.root().toString())) {
            warden.awaitJson("/api/v1/status", "/reaper/last_pass/action", a -> "users-live".equals(a.asText()));
            assertTrue(warden.json("/api/v1/status").at("/engines/0/records/0/answers").asBoolean(), "the real /running answers");
            user.kill();
            assertTrue(llamaSwap.waitFor(40, java.util.concurrent.TimeUnit.SECONDS), "llama-swap is stopped:\n" + warden.log());
            assertEquals(0, llamaSwap.exitValue(), "llama-swap drained and exited on SIGTERM");
            Await.until("its llama-server is gone", () -> ProcessHandle.of(server).map(h -> !h.isAlive()).orElse(true));
            warden.awaitJson("/api/v1/status", "/engines/0/records", r -> r.isArray() && r.isEmpty());
        }
    }

    @Test
    void aServingWardenUnloadsAKeptWarmRealLlamaSwapAfterTheIdleTime() throws Exception {
        Process llamaSwap = start();
        load();
        record(llamaSwap);
        // An empty marker names no minutes: warden.reaper.idle-ttl applies.
        Files.writeString(dir.usersDir().resolve("0123456789abcdef.keep-warm"), "");
        try (WardenProcess warden = WardenProcess.serve("llama-swap-keep-warm", List.of("-Dwarden.reaper.idle-ttl=2s"),
                "--data-root", root.resolve("lib").toString(), "--engine-dir", dir.root().toString())) {
            warden.awaitJson("/api/v1/status", "/reaper/last_action/action", a -> "unloaded".equals(a.asText()));
            assertTrue(!running().contains("fake"), running());
            Await.until("the llama-server has exited", () -> llamaServer().isEmpty());
            assertTrue(llamaSwap.isAlive(), "a kept-warm llama-swap keeps running without its weights");
            assertTrue(client.answers(EngineClient.Endpoint.configured(EngineClient.loopback(proxy))));
        }
    }
}
