package dev.warden.testing;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A streamed chat completion through llama-swap, read on a thread of its own: a generation in flight, and what its
 * client sees when the engine goes away under it. It asks for 100,000 tokens, ignoring the end-of-text token, of a
 * server that shifts its context ({@link RealLlamaServer#command}): minutes of tokens, so it lasts until it is cut.
 */
public final class Generation implements AutoCloseable {

    /** How a generation ended, as its client saw it. */
    public enum Ending {
        /** The stream ended with {@code data: [DONE]}. */
        COMPLETED,
        /** The stream ended without it: the connection was closed or reset mid-answer. */
        CUT,
        /** No stream at all: an error status. */
        REFUSED
    }

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    private final AtomicInteger chunks = new AtomicInteger();
    private final CompletableFuture<Void> flowing = new CompletableFuture<>();
    private final CompletableFuture<Ending> ended = new CompletableFuture<>();
    private volatile InputStream body;

    private Generation() {
    }

    /** Starts one against llama-swap's proxy on {@code port} for {@code model}; returns at once. */
    public static Generation start(int port, String model) {
        Generation generation = new Generation();
        String json = "{\"model\": \"" + model + "\", \"stream\": true, \"max_tokens\": 100000, \"ignore_eos\": true,"
                + " \"messages\": [{\"role\": \"user\", \"content\": \"hello world\"}]}";
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/chat/completions"))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(json)).build();
        Thread.ofPlatform().daemon().name("generation").start(() -> generation.read(request));
        return generation;
    }

    private void read(HttpRequest request) {
        try {
            HttpResponse<InputStream> response = HTTP.send(request, HttpResponse.BodyHandlers.ofInputStream());
            body = response.body();
            if (response.statusCode() != 200) {
                body.close();
                ended.complete(Ending.REFUSED);
                return;
            }
            try (BufferedReader lines = new BufferedReader(new InputStreamReader(body, StandardCharsets.UTF_8))) {
                String line;
                while ((line = lines.readLine()) != null) {
                    if (line.equals("data: [DONE]")) {
                        ended.complete(Ending.COMPLETED);
                        return;
                    }
                    if (line.startsWith("data: ") && chunks.incrementAndGet() >= 3) {
                        flowing.complete(null);
                    }
                }
            }
            ended.complete(Ending.CUT);
        } catch (IOException e) {
            ended.complete(chunks.get() > 0 ? Ending.CUT : Ending.REFUSED);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            ended.complete(Ending.CUT);
        } finally {
            flowing.complete(null);
        }
    }

    /** Waits until tokens stream (a few chunks have come), and fails if it ended instead. */
    public Generation awaitTokens(Duration patience) throws InterruptedException {
        try {
            flowing.get(patience.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException | TimeoutException e) {
            throw new AssertionError("no tokens streamed within " + patience, e);
        }
        if (ended.isDone()) {
            throw new AssertionError("the generation ended (" + ended.join() + ") after " + chunks.get()
                    + " chunks, before it could be caught in flight");
        }
        return this;
    }

    /** Whether it is still streaming. */
    public boolean inFlight() {
        return !ended.isDone();
    }

    /** How it ended, waiting up to {@code patience}. */
    public Ending ending(Duration patience) throws InterruptedException {
        try {
            return ended.get(patience.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException | TimeoutException e) {
            throw new AssertionError("the generation did not end within " + patience + " (" + chunks.get() + " chunks)", e);
        }
    }

    public int chunks() {
        return chunks.get();
    }

    /** The client goes away: its connection closed. */
    @Override
    public void close() throws IOException {
        InputStream open = body;
        if (open != null) {
            open.close();
        }
    }
}
