package dev.warden.testing;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Optional;

/**
 * GET on a loopback port (or a pod's address), for polling a process the test did not start as a {@link WardenProcess}
 * (a container's published port, a pod's warden).
 */
public final class LoopbackHttp {

    /**
     * HTTP/1.1, as a kubelet's probes and lilbee speak it: the JDK client's default asks every server to
     * upgrade to HTTP/2 (h2c), which Vert.x grants, and that alone left warden about 2 MiB bigger. Shared
     * with {@link WardenProcess}.
     */
    static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2))
            .version(HttpClient.Version.HTTP_1_1).build();

    private LoopbackHttp() {
    }

    /** The status of {@code GET http://127.0.0.1:PORT/PATH}, or -1 while nothing answers within {@code timeout}. */
    public static int status(int port, String path, Duration timeout) {
        return status("127.0.0.1", port, path, timeout);
    }

    /** The status of {@code GET http://HOST:PORT/PATH} (a pod's address, say), or -1 while nothing answers. */
    public static int status(String host, int port, String path, Duration timeout) {
        return send(host, port, path, timeout, HttpResponse.BodyHandlers.discarding()).map(HttpResponse::statusCode).orElse(-1);
    }

    /** The body of the same, whatever its status; empty while nothing answers within {@code timeout}. */
    public static Optional<String> body(int port, String path, Duration timeout) {
        return body("127.0.0.1", port, path, timeout);
    }

    public static Optional<String> body(String host, int port, String path, Duration timeout) {
        return send(host, port, path, timeout, HttpResponse.BodyHandlers.ofString()).map(HttpResponse::body);
    }

    /** The body of {@code GET http://HOST:PORT/PATH} sent with {@code Authorization: Bearer TOKEN}; empty while nothing answers. */
    public static Optional<String> body(String host, int port, String path, Duration timeout, String token) {
        return send(host, port, path, timeout, HttpResponse.BodyHandlers.ofString(), "Authorization", "Bearer " + token)
                .map(HttpResponse::body);
    }

    private static <T> Optional<HttpResponse<T>> send(String host, int port, String path, Duration timeout,
            HttpResponse.BodyHandler<T> body, String... headers) {
        try {
            HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://" + host + ":" + port + path)).timeout(timeout);
            if (headers.length > 0) {
                request.headers(headers);
            }
            return Optional.of(HTTP.send(request.build(), body));
        } catch (IOException e) {
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }
}
