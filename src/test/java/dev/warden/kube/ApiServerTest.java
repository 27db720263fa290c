package dev.warden.kube;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import dev.warden.testing.TestCertificate;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** warden's API server client against a real TLS server on loopback (the JDK's): trust, token, answers and their cap. */
class ApiServerTest {

    @TempDir
    Path dir;

    private HttpsServer server;

    @AfterEach
    void stop() {
        if (server != null) {
            server.stop(0);
        }
    }

    private URI serve(TestCertificate certificate, AtomicReference<String> authorization, byte[] answer) throws Exception {
        KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        keys.init(certificate.store(), certificate.password());
        SSLContext tls = SSLContext.getInstance("TLS");
        tls.init(keys.getKeyManagers(), null, null);
        server = HttpsServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setHttpsConfigurator(new HttpsConfigurator(tls));
        server.createContext("/", exchange -> {
            authorization.set(exchange.getRequestHeaders().getFirst("Authorization") + " " + exchange.getRequestMethod() + " "
                    + exchange.getRequestURI());
            exchange.sendResponseHeaders(200, answer.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(answer);
            }
        });
        server.start();
        return URI.create("https://127.0.0.1:" + server.getAddress().getPort());
    }

    /** A client of {@code uri} trusting {@code authority} (PEM) alone, with {@code token}. */
    private static ApiServer client(URI uri, String authority, Optional<String> token) {
        return new ApiServer(new ApiServer.Access(uri, Tls.context(Optional.of(authority), Optional.empty(), "the test"),
                () -> token, Optional.empty(), "the test"), Duration.ofSeconds(5));
    }

    @Test
    void aRequestCarriesTheTokenToTheServerItsAuthoritySigned() throws Exception {
        TestCertificate certificate = TestCertificate.make(dir, "apiserver");
        AtomicReference<String> seen = new AtomicReference<>();
        URI uri = serve(certificate, seen, "{\"kind\":\"Lease\"}".getBytes(StandardCharsets.UTF_8));
        try (ApiServer api = client(uri, certificate.certificatePem(), Optional.of("secret-token"))) {
            ApiServer.Answer answer = api.get("/apis/coordination.k8s.io/v1/namespaces/n/leases/l");
            assertEquals(200, answer.status());
            assertEquals("{\"kind\":\"Lease\"}", answer.body());
            assertEquals("Bearer secret-token GET /apis/coordination.k8s.io/v1/namespaces/n/leases/l", seen.get());
        }
    }

    @Test
    void aServerAnotherAuthoritySignedIsNotTalkedTo() throws Exception {
        AtomicReference<String> seen = new AtomicReference<>();
        URI uri = serve(TestCertificate.make(dir, "impostor"), seen, new byte[0]);
        String trusted = TestCertificate.make(dir, "apiserver").certificatePem();
        try (ApiServer api = client(uri, trusted, Optional.of("secret-token"))) {
            assertThrows(IOException.class, () -> api.get("/api"));
        }
        assertEquals(null, seen.get(), "the token never reached it");
    }

    @Test
    void anAnswerOverTheCapIsRefused() throws Exception {
        TestCertificate certificate = TestCertificate.make(dir, "apiserver");
        URI uri = serve(certificate, new AtomicReference<>(), new byte[ApiServer.MAX_ANSWER + 1]);
        try (ApiServer api = client(uri, certificate.certificatePem(), Optional.empty())) {
            IOException e = assertThrows(IOException.class, () -> api.get("/api"));
            assertTrue(e.getMessage().contains("over " + ApiServer.MAX_ANSWER + " bytes"), e.getMessage());
        }
    }
}
