package dev.warden.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Optional;

/**
 * Speaks llama-swap's HTTP contract (PROTOCOL.md section 4): {@code GET /running} to tell our
 * engine from whatever else may answer on a recycled port, and the unload endpoints that free
 * the weights while the proxy stays up. Never {@code /upstream/...}: that loads models.
 */
public final class EngineClient {

    private final ObjectMapper json;
    private final HttpClient http;
    private final Duration readTimeout;
    private final Duration unloadTimeout;
    private final Optional<String> apiKey;

    public EngineClient(ObjectMapper json, Duration connectTimeout, Duration readTimeout, Duration unloadTimeout,
            Optional<String> apiKey) {
        this.json = json;
        this.http = HttpClient.newBuilder().connectTimeout(connectTimeout).followRedirects(HttpClient.Redirect.NEVER)
                .version(HttpClient.Version.HTTP_1_1).build();
        this.readTimeout = readTimeout;
        this.unloadTimeout = unloadTimeout;
        this.apiKey = apiKey.filter(k -> !k.isBlank());
    }

    /** The proxy of a recorded engine: llama-swap on loopback. */
    public static URI loopback(int port) {
        return URI.create("http://127.0.0.1:" + port);
    }

    /**
     * Whether llama-swap answers at {@code base}: {@code /running} below 400 with a {@code running}
     * list. A refused connection, a 503, {@code {"ok":true}} or a web page is not our engine.
     */
    public boolean answers(URI base) {
        try {
            HttpResponse<String> response = http.send(request(base, "/running", readTimeout).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            return response.statusCode() < 400 && json.readTree(response.body()).path("running").isArray();
        } catch (IOException | RuntimeException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /**
     * Unloads every model: {@code POST /api/models/unload} (v126+), falling back to
     * {@code GET /unload} (v91+) when the first is 404 or 405. Both return once the model
     * processes have exited.
     */
    public UnloadResult unload(URI base) {
        try {
            HttpResponse<String> response = http.send(request(base, "/api/models/unload", unloadTimeout)
                    .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() == 404 || response.statusCode() == 405) {
                response = http.send(request(base, "/unload", unloadTimeout).GET().build(), HttpResponse.BodyHandlers.ofString());
            }
            if (response.statusCode() < 300) {
                return new UnloadResult(true, "unloaded (" + response.statusCode() + ")");
            }
            return new UnloadResult(false, "refused with " + response.statusCode() + errorOf(response.body()));
        } catch (IOException | RuntimeException e) {
            return new UnloadResult(false, "no answer: " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new UnloadResult(false, "interrupted");
        }
    }

    /** What an unload did. */
    public record UnloadResult(boolean unloaded, String detail) {
    }

    private HttpRequest.Builder request(URI base, String path, Duration timeout) {
        HttpRequest.Builder builder = HttpRequest.newBuilder(base.resolve(path)).timeout(timeout);
        apiKey.ifPresent(key -> builder.header("Authorization", "Bearer " + key));
        return builder;
    }

    /** llama-swap's error body: {"error": "..."} up to v250, {"error": {"message": ...}} after. */
    private String errorOf(String body) {
        try {
            JsonNode error = json.readTree(body).path("error");
            if (error.isTextual()) {
                return ": " + error.asText();
            }
            if (error.path("message").isTextual()) {
                return ": " + error.path("message").asText();
            }
        } catch (IOException | RuntimeException e) {
            // not JSON
        }
        String trimmed = body == null ? "" : body.strip();
        return trimmed.isEmpty() ? "" : ": " + (trimmed.length() > 200 ? trimmed.substring(0, 200) + "..." : trimmed);
    }
}
