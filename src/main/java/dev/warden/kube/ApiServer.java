package dev.warden.kube;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.function.Supplier;
import javax.net.ssl.SSLContext;

/**
 * The API server as warden asks it: JSON requests to a path under its URL over the JDK's HTTP client, as the
 * credentials {@link KubernetesAccess} found (a bearer token read at each request, or a client certificate in the TLS
 * context), each request bounded by a timeout and its answer read up to a cap. warden writes its few requests itself
 * (a Lease's get and update, a pod's labels, an Event) rather than carry a Kubernetes client's model of every kind.
 */
public final class ApiServer implements AutoCloseable {

    /** The largest answer read: a Lease, a Status or a Pod's labels patch is a few kilobytes. */
    static final int MAX_ANSWER = 256 * 1024;

    private final Access access;
    private final Duration timeout;
    private final HttpClient http;

    /**
     * Where and as whom: the API server's URL, the TLS context that trusts its certificate authority (and holds a
     * client certificate, if that is the credential), the bearer token (read at each request: the kubelet rotates a
     * projected token in place), and the namespace the credentials name, if any.
     */
    public record Access(URI server, SSLContext tls, Supplier<Optional<String>> token, Optional<String> namespace,
            String source) {
    }

    /** What the API server answered: its status and at most {@link #MAX_ANSWER} bytes of its body. */
    public record Answer(int status, String body) {

        public boolean ok() {
            return status >= 200 && status < 300;
        }
    }

    public ApiServer(Access access, Duration timeout) {
        this.access = access;
        this.timeout = timeout;
        this.http = HttpClient.newBuilder().sslContext(access.tls()).connectTimeout(timeout)
                .version(HttpClient.Version.HTTP_1_1).followRedirects(HttpClient.Redirect.NEVER).build();
    }

    /** The namespace the credentials name (the service account's, or the kubeconfig context's), if any. */
    public Optional<String> namespace() {
        return access.namespace();
    }

    /** Where the credentials came from, for messages: the service account, or a kubeconfig file. */
    public String source() {
        return access.source();
    }

    public Answer get(String path) throws IOException, InterruptedException {
        return send("GET", path, null, null);
    }

    /**
     * {@code method} on {@code path} (from the API server's root, {@code /apis/...}) with {@code body} of {@code contentType}
     * (both null: none), bounded by the timeout.
     *
     * @throws IOException the request failed or timed out, or the answer was over the cap
     */
    public Answer send(String method, String path, String contentType, String body) throws IOException, InterruptedException {
        URI uri = URI.create(access.server().toString().replaceAll("/+$", "") + path);
        HttpRequest.Builder request = HttpRequest.newBuilder(uri).timeout(timeout)
                .header("Accept", "application/json")
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (contentType != null) {
            request.header("Content-Type", contentType);
        }
        access.token().get().ifPresent(token -> request.header("Authorization", "Bearer " + token));
        HttpResponse<InputStream> response = http.send(request.build(), HttpResponse.BodyHandlers.ofInputStream());
        try (InputStream in = response.body()) {
            byte[] bytes = in.readNBytes(MAX_ANSWER + 1);
            if (bytes.length > MAX_ANSWER) {
                throw new IOException("the API server's answer to " + method + " " + path + " is over " + MAX_ANSWER + " bytes");
            }
            return new Answer(response.statusCode(), new String(bytes, StandardCharsets.UTF_8));
        }
    }

    @Override
    public void close() {
        http.shutdownNow();
    }
}
