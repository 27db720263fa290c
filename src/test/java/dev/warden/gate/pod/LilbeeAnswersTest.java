package dev.warden.gate.pod;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * An answer is used again for a second, but only for the lilbee that gave it: one started again after a crash (the
 * spare takes over in milliseconds) must be asked itself, or the pod is routed to before it listens (seen on the real
 * kubelet: labelled primary 0.2 s before lilbee listened).
 */
class LilbeeAnswersTest {

    @Test
    void anAnswerIsUsedAgainOnlyForTheLilbeeThatGaveIt() throws Exception {
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        AtomicInteger asked = new AtomicInteger();
        server.createContext("/api/health", exchange -> {
            asked.incrementAndGet();
            exchange.sendResponseHeaders(401, -1);
            exchange.close();
        });
        server.start();
        try {
            URI url = URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/api/health");
            LilbeeAnswers answers = new LilbeeAnswers(Optional.of(url), Duration.ofSeconds(1));
            assertTrue(answers.look(100).orElseThrow().answers(), "a 401 shows it serves");
            assertTrue(answers.look(100).orElseThrow().answers());
            assertEquals(1, asked.get(), "used again within the second");
            assertTrue(answers.look(101).orElseThrow().answers());
            assertEquals(2, asked.get(), "another lilbee is asked itself");
            server.stop(0);
            assertFalse(answers.look(102).orElseThrow().answers(), "nothing listens for the next one");
            assertEquals(Optional.empty(), new LilbeeAnswers(Optional.empty(), Duration.ofSeconds(1)).look(100));
        } finally {
            server.stop(0);
        }
    }
}
