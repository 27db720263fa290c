package dev.warden.boundary;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The deadlines on Netty's embedded channel, whose clock the test moves. */
class RequestDeadlineTest {

    private static final ConnectionLimits LIMITS = new ConnectionLimits(256, 32, Duration.ofSeconds(10), Duration.ofMinutes(3),
            Duration.ofSeconds(75));

    private final EmbeddedChannel channel = new EmbeddedChannel(new RequestDeadline(LIMITS));

    private void receive(String bytes) {
        channel.writeInbound(Unpooled.copiedBuffer(bytes, StandardCharsets.US_ASCII));
    }

    private void after(long seconds) {
        channel.advanceTimeBy(seconds, TimeUnit.SECONDS);
        channel.runScheduledPendingTasks();
    }

    @Test
    void aHeadTrickledByteByByteIsClosedAtTheHeaderDeadlineWhateverItSends() {
        for (int second = 0; second < 9; second++) {
            receive("G");
            after(1);
        }
        assertTrue(channel.isOpen(), "within 10 s of the accept");
        receive("E");
        after(2);
        assertFalse(channel.isOpen(), "10 s after the accept, bytes or not");
    }

    @Test
    void aHeadEndingAcrossReadsStopsTheHeaderDeadline() {
        receive("GET /q/health/live HTTP/1.1\r\nHost: x\r\n\r");
        receive("\n");
        after(60);
        assertTrue(channel.isOpen(), "the head is complete: warden has 3 minutes to answer it");
        after(121);
        assertFalse(channel.isOpen(), "an answer not begun within 3 minutes of the head");
    }

    @Test
    void afterAnAnswerTheNextHeadIsDueWithinTheIdleTime() {
        receive("GET /q/metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        channel.writeOutbound(Unpooled.copiedBuffer("HTTP/1.1 200 OK\r\n\r\n", StandardCharsets.US_ASCII));
        after(70);
        assertTrue(channel.isOpen(), "a keep-alive client scraping every minute keeps its connection");
        receive("GET /q/metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        channel.writeOutbound(Unpooled.copiedBuffer("HTTP/1.1 200 OK\r\n\r\n", StandardCharsets.US_ASCII));
        after(70);
        assertTrue(channel.isOpen());
        receive("GET /q/metr");
        after(6);
        assertFalse(channel.isOpen(), "75 s after the last answer, a head begun but not ended");
    }
}
