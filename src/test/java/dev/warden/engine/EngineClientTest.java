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
        assertTrue(client(Optional.empty()).answers(EngineClient.Endpoint.configured(base)));
    }

    @Test
    void aRecycledPortAnsweringSomethingElseIsNotOurEngine() throws Exception {
        assertFalse(client(Optional.empty()).answers(EngineClient.Endpoint.configured(serve(Map.of("GET /running", new Object[] {200, "{\"ok\": true}"})))));
        stop();
        assertFalse(client(Optional.empty()).answers(EngineClient.Endpoint.configured(serve(Map.of("GET /running", new Object[] {503, "{\"running\": []}"})))));
        stop();
        assertFalse(client(Optional.empty()).answers(EngineClient.Endpoint.configured(serve(Map.of("GET /running", new Object[] {200, "<html>hi</html>"})))));
        stop();
        server = null;
        assertFalse(client(Optional.empty()).answers(EngineClient.Endpoint.configured(URI.create("http://127.0.0.1:" + dev.warden.testing.FakeEngine.freePort()))),
                "a refused connection is no engine");
    }

    @Test
    void unloadUsesTheModelsApiAndSendsTheKey() throws Exception {
        URI base = serve(Map.of("POST /api/models/unload", new Object[] {200, "{\"msg\": \"ok\"}"}));
        EngineClient.UnloadResult result = client(Optional.of("sekret")).unload(EngineClient.Endpoint.configured(base));
        assertTrue(result.unloaded(), result.detail());
        assertEquals(List.of("POST /api/models/unload Bearer sekret"), requests);
    }

    @Test
    void anOlderLlamaSwapIsUnloadedThroughGetUnload() throws Exception {
        URI base = serve(Map.of("POST /api/models/unload", new Object[] {405, ""}, "GET /unload", new Object[] {200, "OK"}));
        assertTrue(client(Optional.empty()).unload(EngineClient.Endpoint.configured(base)).unloaded());
        assertEquals(List.of("POST /api/models/unload null", "GET /unload null"), requests);
    }

    @Test
    void bothErrorBodyShapesAreUnderstood() throws Exception {
        URI base = serve(Map.of("POST /api/models/unload", new Object[] {500, "{\"error\": \"model busy\"}"}));
        EngineClient.UnloadResult old = client(Optional.empty()).unload(EngineClient.Endpoint.configured(base));
        assertFalse(old.unloaded());
        assertEquals("refused with 500: model busy", old.detail());
        stop();
        base = serve(Map.of("POST /api/models/unload", new Object[] {503, "{\"error\": {\"message\": \"loading\"}}"}));
        assertEquals("refused with 503: loading", client(Optional.empty()).unload(EngineClient.Endpoint.configured(base)).detail());
    }

    @Test
    void anUnloadNobodyAnswersIsNotAnUnload() throws Exception {
        EngineClient.UnloadResult result = client(Optional.empty())
                .unload(EngineClient.Endpoint.configured(URI.create("http://127.0.0.1:" + dev.warden.testing.FakeEngine.freePort())));
        assertFalse(result.unloaded());
        assertTrue(result.detail().startsWith("no answer"), result.detail());
    }

    /** Something else on the port: a body too big for the heap, or one trickled for ever. */
    @Test
    void aHugeOrTrickledAnswerIsNoEngineAndIsGivenUpOn() throws Exception {
        EngineClient client = new EngineClient(new ObjectMapper(), Duration.ofMillis(500), Duration.ofSeconds(2),
                Duration.ofSeconds(30), Optional.empty());
        for (String kind : List.of("--huge-running", "--trickle-running")) {
            int port = dev.warden.testing.FakeEngine.freePort();
            try (dev.warden.testing.FakeEngine hostile = dev.warden.testing.FakeEngine.startLlamaSwap("--port",
                    Integer.toString(port), kind)) {
                long started = System.nanoTime();
                assertFalse(client.answers(EngineClient.Endpoint.configured(EngineClient.loopback(port))), kind);
                // A bound on behaviour, not a speed goal: without a deadline on the whole answer this never returns.
                assertTrue(Duration.ofNanos(System.nanoTime() - started).compareTo(Duration.ofSeconds(20)) < 0, kind);
                if (kind.equals("--huge-running")) {
                    dev.warden.testing.Await.until("the fake stopped writing",
                            () -> hostile.printed().stream().anyMatch(l -> l.startsWith("wrote ")));
                    long written = hostile.printed().stream().filter(l -> l.startsWith("wrote "))
                            .mapToLong(l -> Long.parseLong(l.substring("wrote ".length()))).findFirst().orElseThrow();
                    assertTrue(written < 64L * 1024 * 1024, "warden hung up early, not after " + written + " bytes");
                }
            }
        }
    }
}
