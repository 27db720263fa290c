package dev.warden.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** llama-swap's HTTP contract as warden's client reads it, against scripted answers on loopback. */
class EngineClientTest {

    private HttpServer server;
    private final List<String> requests = new CopyOnWriteArrayList<>();

    @AfterEach
    void stop() {
        if (server != null) {
            server.stop(0);
        }
    }

    /** A loopback server answering "METHOD /path" with (status, body). */
    private URI serve(Map<String, Object[]> answers) throws Exception {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 8);
        server.createContext("/", exchange -> {
            try (exchange) {
                String key = exchange.getRequestMethod() + " " + exchange.getRequestURI().getPath();
                requests.add(key + " " + exchange.getRequestHeaders().getFirst("Authorization"));
                Object[] answer = answers.getOrDefault(key, new Object[] {404, "404 page not found"});
                byte[] body = ((String) answer[1]).getBytes(StandardCharsets.UTF_8);
                exchange.sendResponseHeaders((Integer) answer[0], body.length);
                exchange.getResponseBody().write(body);
            }
        });
        server.start();
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    private static EngineClient client(Optional<String> key) {
        return new EngineClient(new ObjectMapper(), Duration.ofMillis(500), Duration.ofSeconds(2), Duration.ofSeconds(30), key);
    }

    @Test
    void llamaSwapAnswersRunningWithAList() throws Exception {
        URI base = serve(Map.of("GET /running", new Object[] {200, "{\"running\": []}"}));
        assertTrue(client(Optional.empty()).answers(base));
    }

    @Test
    void aRecycledPortAnsweringSomethingElseIsNotOurEngine() throws Exception {
        assertFalse(client(Optional.empty()).answers(serve(Map.of("GET /running", new Object[] {200, "{\"ok\": true}"}))));
        stop();
        assertFalse(client(Optional.empty()).answers(serve(Map.of("GET /running", new Object[] {503, "{\"running\": []}"}))));
        stop();
        assertFalse(client(Optional.empty()).answers(serve(Map.of("GET /running", new Object[] {200, "<html>hi</html>"}))));
        stop();
        server = null;
        assertFalse(client(Optional.empty()).answers(URI.create("http://127.0.0.1:" + dev.warden.testing.FakeEngine.freePort())),
                "a refused connection is no engine");
    }

    @Test
    void unloadUsesTheModelsApiAndSendsTheKey() throws Exception {
        URI base = serve(Map.of("POST /api/models/unload", new Object[] {200, "{\"msg\": \"ok\"}"}));
        EngineClient.UnloadResult result = client(Optional.of("sekret")).unload(base);
        assertTrue(result.unloaded(), result.detail());
        assertEquals(List.of("POST /api/models/unload Bearer sekret"), requests);
    }

    @Test
    void anOlderLlamaSwapIsUnloadedThroughGetUnload() throws Exception {
        URI base = serve(Map.of("POST /api/models/unload", new Object[] {405, ""}, "GET /unload", new Object[] {200, "OK"}));
        assertTrue(client(Optional.empty()).unload(base).unloaded());
        assertEquals(List.of("POST /api/models/unload null", "GET /unload null"), requests);
    }

    @Test
    void bothErrorBodyShapesAreUnderstood() throws Exception {
        URI base = serve(Map.of("POST /api/models/unload", new Object[] {500, "{\"error\": \"model busy\"}"}));
        EngineClient.UnloadResult old = client(Optional.empty()).unload(base);
        assertFalse(old.unloaded());
        assertEquals("refused with 500: model busy", old.detail());
        stop();
        base = serve(Map.of("POST /api/models/unload", new Object[] {503, "{\"error\": {\"message\": \"loading\"}}"}));
        assertEquals("refused with 503: loading", client(Optional.empty()).unload(base).detail());
    }

    @Test
    void anUnloadNobodyAnswersIsNotAnUnload() throws Exception {
        EngineClient.UnloadResult result = client(Optional.empty())
                .unload(URI.create("http://127.0.0.1:" + dev.warden.testing.FakeEngine.freePort()));
        assertFalse(result.unloaded());
        assertTrue(result.detail().startsWith("no answer"), result.detail());
    }
}
