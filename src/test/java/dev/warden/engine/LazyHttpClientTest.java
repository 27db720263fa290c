package dev.warden.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.net.http.HttpClient;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class LazyHttpClientTest {

    @Test
    void oneClientForEveryUseOnHttp11FollowingNoRedirect() {
        LazyHttpClient lazy = new LazyHttpClient(Duration.ofMillis(300));

        HttpClient client = lazy.get();

        assertSame(client, lazy.get());
        assertEquals(HttpClient.Version.HTTP_1_1, client.version());
        assertEquals(HttpClient.Redirect.NEVER, client.followRedirects());
        assertEquals(Optional.of(Duration.ofMillis(300)), client.connectTimeout());
    }
}
