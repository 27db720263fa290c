package dev.warden.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.warden.engine.EngineDir;
import dev.warden.engine.ProcessInfo;
import dev.warden.engine.ProcessTable;
import dev.warden.testing.Await;
import dev.warden.testing.InteropTools;
import dev.warden.testing.KernelLocks;
import dev.warden.testing.LilbeeServe;
import dev.warden.testing.RealLlamaServer;
import dev.warden.testing.RealLlamaSwap;
import dev.warden.testing.WardenProcess;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * End to end with lilbee's own engine: the real {@code lilbee serve} 0.6.90b449 with the real llama.cpp llama-server
 * ({@code LILBEE_LLAMA_SERVER_PATH}), the real llama-swap on its PATH, and a generated GGUF as its chat model (an
 * absolute path: no hub, nothing downloaded). A chat through lilbee's own API makes lilbee start its fleet and write its
 * own engine record and user lock; warden, the engine dir's reaper, counts lilbee as the user; lilbee is SIGKILLed and
 * warden stops what it left.
 */
class LilbeeEngineInteropIT {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private static final int MODEL_MB = 24;

    @TempDir
    Path dir;

    @Test
    void theFleetLilbeeStartedForAChatIsStoppedByWardenWhenLilbeeIsKilled() throws Exception {
        dir = dir.toRealPath();
        Path model = RealLlamaServer.model(MODEL_MB);
        // lilbee finds llama-swap on its PATH, llama-server where LILBEE_LLAMA_SERVER_PATH says.
        Path bin = Files.createDirectories(dir.resolve("bin"));
        Files.createSymbolicLink(bin.resolve("llama-swap"), Path.of(InteropTools.path("llama-swap")));
        EngineDir engine = new EngineDir(dir.resolve("engine"));
        Map<String, String> given = new HashMap<>(Map.of("LILBEE_DATA", dir.resolve("lilbee").toString(),
                "LILBEE_ENGINE_DIR", engine.root().toString(), "LILBEE_LLAMA_SERVER_PATH", RealLlamaServer.binary(),
                "LILBEE_CHAT_MODEL", model.toString(), "PATH", bin + ":/usr/bin:/bin"));
        Map<String, String> env = LilbeeServe.environment(Files.createDirectories(dir.resolve("home")), given);
        // warden first, as a sidecar starts: it is the engine dir's reaper, so lilbee's own reaper stands down.
        try (WardenProcess warden = WardenProcess.serve("lilbee-engine", env, dir, List.of(),
                "--data-root", dir.resolve("warden").toString(), "--engine-dir", engine.root().toString());
                LilbeeServe lilbee = LilbeeServe.start(dir, env)) {
            warden.awaitJson("/api/v1/status", "/reaper/watching", JsonNode::asBoolean);
            lilbee.awaitServing();
            Path data = dir.resolve("lilbee/data");
            // lilbee creates each file before it writes it: wait for what can be read, not for the name.
            Await.until("lilbee wrote its port and its clients' token", () -> written(data));

            HttpResponse<String> chat = chat(data, model);
            assertEquals(200, chat.statusCode(), chat.body() + "\n" + lilbee.log());
            assertEquals("assistant", JSON.readTree(chat.body()).at("/choices/0/message/role").asText(), chat.body());

            // What lilbee made for that chat, by its own modules: its record, its user lock, its fleet.
            Path record = engine.root().resolve("llama-swap.state.chat." + lilbee.pid() + ".json");
            assertTrue(Files.isRegularFile(record), "lilbee's record: " + engine.root());
            long llamaSwap = JSON.readTree(Files.readString(record)).path("pid").asLong();
            List<ProcessInfo> servers = new ProcessTable().all().stream().filter(p -> p.isLlamaServer() && p.ppid() == llamaSwap).toList();
            assertEquals(1, servers.size(), "one llama-server under lilbee's llama-swap " + llamaSwap);
            assertTrue(KernelLocks.flockHolders(engine.userLock(Long.toString(lilbee.pid()))).contains(lilbee.pid()),
                    "lilbee holds its user lock");
            warden.awaitJson("/api/v1/status", "/engines/0/records/0/ours", ours -> ours.asText().equals("yes"));
            warden.awaitJson("/api/v1/status", "/reaper/last_pass/action", a -> "users-live".equals(a.asText()));

            lilbee.process().destroyForcibly().waitFor();
            Await.until("warden stops lilbee's llama-swap", () -> !RealLlamaSwap.holdsMemory(llamaSwap));
            Await.until("and its llama-server", () -> !RealLlamaSwap.holdsMemory(servers.getFirst().pid()));
            Await.until("and deletes lilbee's record", () -> !Files.exists(record));
            // The record goes before the line saying so is logged.
            Await.until("warden says it stopped that llama-swap",
                    () -> warden.log().contains("stopped llama-swap pid " + llamaSwap));
        }
    }

    /** Whatever lilbee's fleet left if the test failed before warden stopped it: llama-swap's session, by pid. */
    @AfterEach
    void killTheFleet() {
        ProcessTable processes = new ProcessTable();
        List<ProcessInfo> all = processes.all();
        all.stream().filter(p -> p.isLlamaSwap() && String.join(" ", p.argv()).contains(dir.toString()))
                .forEach(swap -> all.stream().filter(p -> p.sid() == swap.pid())
                        .forEach(p -> ProcessHandle.of(p.pid()).ifPresent(ProcessHandle::destroyForcibly)));
    }

    private static boolean written(Path dataDir) {
        try {
            return Files.readString(dataDir.resolve("server.port")).trim().matches("[0-9]+")
                    && !JSON.readTree(Files.readString(dataDir.resolve("server.json"))).path("token").asText().isEmpty();
        } catch (IOException e) {
            return false;
        }
    }

    /** A chat completion through lilbee's OpenAI-compatible API, with the token lilbee wrote for its clients. */
    private static HttpResponse<String> chat(Path dataDir, Path model) throws Exception {
        String token = JSON.readTree(Files.readString(dataDir.resolve("server.json"))).path("token").asText();
        int port = Integer.parseInt(Files.readString(dataDir.resolve("server.port")).trim());
        String body = "{\"model\": " + JSON.writeValueAsString(model.toString()) + ", \"max_tokens\": 8,"
                + " \"messages\": [{\"role\": \"user\", \"content\": \"hello\"}]}";
        return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/chat/completions"))
                .header("Authorization", "Bearer " + token).header("Content-Type", "application/json")
                .timeout(Duration.ofSeconds(120)).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }
}
