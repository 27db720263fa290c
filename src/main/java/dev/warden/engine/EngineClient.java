package dev.warden.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Speaks llama-swap's HTTP contract (PROTOCOL.md section 4): {@code GET /running} to tell our
 * engine from whatever else may answer on a recycled port, and the unload endpoints that free
 * the weights while the proxy stays up. Never {@code /upstream/...}: that loads models.
 */
public final class EngineClient {

    /**
     * The most of an answer warden reads: {@code /running} lists at most a few models, an unload
     * answers a line. Anything on the port that sends more is not llama-swap, and must not fill the heap.
     */
    static final int MAX_BODY = 64 * 1024;

    private final ObjectMapper json;
    private final LazyHttpClient http;
    private final Duration readTimeout;
    private final Duration unloadTimeout;
    private final Optional<String> apiKey;

    public EngineClient(ObjectMapper json, Duration connectTimeout, Duration readTimeout, Duration unloadTimeout,
            Optional<String> apiKey) {
        this.json = json;
        this.http = new LazyHttpClient(connectTimeout);
        this.readTimeout = readTimeout;
        this.unloadTimeout = unloadTimeout;
        this.apiKey = apiKey.filter(k -> !k.isBlank());
    }

    /**
     * Where an engine answers, and whether it may be sent {@code warden.engine.api-key}: only
     * {@code warden.engine.url}, or a recorded llama-swap proven to be the process listening on its
     * port. Any process in the pod can listen on a loopback port a record names.
     */
    public record Endpoint(URI base, boolean trusted) {
        public static Endpoint configured(URI url) {
            return new Endpoint(url, true);
        }
    }

    /** The proxy of a recorded engine: llama-swap on loopback. */
    public static URI loopback(int port) {
        return URI.create("http://127.0.0.1:" + port);
    }

    /**
     * Whether llama-swap answers at {@code base}: {@code /running} below 400 with a {@code running}
     * list. A refused connection, a 503, {@code {"ok":true}} or a web page is not our engine.
     */
    public boolean answers(Endpoint engine) {
        try {
            HttpResponse<String> response = exchange(request(engine, "/running", readTimeout).GET().build(), readTimeout);
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
    public UnloadResult unload(Endpoint engine) {
        try {
            HttpResponse<String> response = exchange(request(engine, "/api/models/unload", unloadTimeout)
                    .POST(HttpRequest.BodyPublishers.noBody()).build(), unloadTimeout);
            if (response.statusCode() == 404 || response.statusCode() == 405) {
                response = exchange(request(engine, "/unload", unloadTimeout).GET().build(), unloadTimeout);
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

    /**
     * One request and its whole answer within {@code deadline} (the request's own timeout stops at
     * the headers, so a body trickled a byte at a time would hold the caller for ever), read on the
     * client's threads and cut off past {@link #MAX_BODY}. The caller waits interruptibly.
     */
    private HttpResponse<String> exchange(HttpRequest request, Duration deadline) throws IOException, InterruptedException {
        CompletableFuture<HttpResponse<String>> answer = http.get().sendAsync(request, info -> new CappedBody());
        try {
            return answer.get(deadline.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            answer.cancel(true);
            throw new HttpTimeoutException("no whole answer within " + deadline.toMillis() + " ms");
        } catch (InterruptedException e) {
            answer.cancel(true);
            throw e;
        } catch (ExecutionException e) {
            throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
        }
    }

    /** A body of at most {@link #MAX_BODY} bytes as text; a longer one fails the exchange. */
    private static final class CappedBody implements HttpResponse.BodySubscriber<String> {
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        private final CompletableFuture<String> body = new CompletableFuture<>();
        private Flow.Subscription subscription;

        @Override
        public CompletionStage<String> getBody() {
            return body;
        }

        @Override
        public void onSubscribe(Flow.Subscription subscription) {
            this.subscription = subscription;
            subscription.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(List<ByteBuffer> items) {
            for (ByteBuffer item : items) {
                if (bytes.size() + item.remaining() > MAX_BODY) {
                    subscription.cancel();
                    body.completeExceptionally(new IOException("the answer is longer than " + MAX_BODY + " bytes: not llama-swap"));
                    return;
                }
                byte[] chunk = new byte[item.remaining()];
                item.get(chunk);
                bytes.writeBytes(chunk);
            }
        }

        @Override
        public void onError(Throwable error) {
            body.completeExceptionally(error);
        }

        @Override
        public void onComplete() {
            body.complete(bytes.toString(StandardCharsets.UTF_8));
        }
    }

    /** What an unload did. */
    public record UnloadResult(boolean unloaded, String detail) {
    }

    private HttpRequest.Builder request(Endpoint engine, String path, Duration timeout) {
        HttpRequest.Builder builder = HttpRequest.newBuilder(engine.base().resolve(path)).timeout(timeout);
        if (engine.trusted()) {
            apiKey.ifPresent(key -> builder.header("Authorization", "Bearer " + key));
        }
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
