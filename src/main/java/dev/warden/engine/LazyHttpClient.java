package dev.warden.engine;

import java.net.http.HttpClient;
import java.time.Duration;

/**
 * The JDK HTTP client warden asks a peer of its pod with (llama-swap, lilbee), built at its first
 * use: building one sets up the JDK's TLS stack and reads its trust store (about 380 classes), and
 * starts a selector thread, which a warden that has no peer to ask yet should not pay at start.
 * HTTP/1.1, no redirects followed.
 */
public final class LazyHttpClient {

    private final Duration connectTimeout;
    private HttpClient client;

    public LazyHttpClient(Duration connectTimeout) {
        this.connectTimeout = connectTimeout;
    }

    public synchronized HttpClient get() {
        if (client == null) {
            client = HttpClient.newBuilder().connectTimeout(connectTimeout).followRedirects(HttpClient.Redirect.NEVER)
                    .version(HttpClient.Version.HTTP_1_1).build();
        }
        return client;
    }
}
