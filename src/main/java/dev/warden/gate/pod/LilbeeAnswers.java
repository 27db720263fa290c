package dev.warden.gate.pod;

import dev.warden.config.WardenConfig;
import dev.warden.engine.LazyHttpClient;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Whether this pod's {@code lilbee serve} answers at {@code warden.gate.health-url}: any HTTP status
 * below 500 (lilbee asks a token even for {@code /api/health}, and its 401 shows it serves). Only
 * the status line and headers are read; the body is closed unread. One look a second at most while
 * lilbee answers (fifty while it does not), however often the kubelet or anyone else asks for readiness.
 */
@Singleton
public class LilbeeAnswers {

    /** How long an answer is used again: a lilbee that serves is asked once a second... */
    private static final Duration FRESH = Duration.ofSeconds(1);
    /**
     * ...one that did not answer sooner again, so readiness follows its start closely: a failover waits on this look
     * (a refused connection costs next to nothing).
     */
    private static final Duration FRESH_NO_ANSWER = Duration.ofMillis(20);

    private final Optional<URI> url;
    private final Duration timeout;
    private final LazyHttpClient http;
    private Answer last;
    private long lastNanos;
    private long lastLilbee;

    @Inject
    public LilbeeAnswers(WardenConfig config) {
        this(config.gate().healthUrl(), config.gate().healthTimeout());
    }

    LilbeeAnswers(Optional<URI> url, Duration timeout) {
        this.url = url;
        this.timeout = timeout;
        this.http = new LazyHttpClient(timeout);
    }

    public Optional<URI> url() {
        return url;
    }

    /**
     * Whether {@code lilbee} (the pid holding server.lock) answers: the last answer, looked at again when older than a
     * second or given by another lilbee (one that crashed and was started again answered before it listens); empty
     * without a health URL.
     */
    public synchronized Optional<Answer> look(long lilbee) {
        if (url.isEmpty()) {
            return Optional.empty();
        }
        if (last == null || lilbee != lastLilbee
                || System.nanoTime() - lastNanos > (last.answers() ? FRESH : FRESH_NO_ANSWER).toNanos()) {
            last = ask(url.get());
            lastNanos = System.nanoTime();
            lastLilbee = lilbee;
        }
        return Optional.of(last);
    }

    private Answer ask(URI target) {
        CompletableFuture<HttpResponse<InputStream>> answer = http.get().sendAsync(
                HttpRequest.newBuilder(target).timeout(timeout).GET().build(), HttpResponse.BodyHandlers.ofInputStream());
        try {
            HttpResponse<InputStream> response = answer.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            try (InputStream unread = response.body()) {
                int status = response.statusCode();
                return new Answer(status < 500, "HTTP " + status);
            }
        } catch (TimeoutException e) {
            answer.cancel(true);
            return new Answer(false, "no answer within " + timeout.toMillis() + " ms");
        } catch (ExecutionException e) {
            return new Answer(false, "no answer: " + e.getCause().getClass().getSimpleName());
        } catch (IOException e) {
            return new Answer(false, "no answer: " + e.getClass().getSimpleName());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            answer.cancel(true);
            return new Answer(false, "interrupted");
        }
    }

    /** One look: whether lilbee answered, and what ("HTTP 401", "no answer: ConnectException"). */
    public record Answer(boolean answers, String detail) {
    }
}
