package dev.warden.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** A flapping neighbour costs the API server a burst of Events, then one a while; the same Event is not sent twice soon. */
class EventLimiterTest {

    private static final long T0 = 1_000_000_000_000L;

    @Test
    void aBurstThenOneEveryRefill() {
        EventLimiter limiter = new EventLimiter();
        long admitted = IntStream.range(0, 100).filter(i -> limiter.admit(PodEvent.warning("Fenced", "pid " + i), T0)).count();
        assertEquals(EventLimiter.BURST, admitted);
        assertFalse(limiter.admit(PodEvent.warning("Fenced", "pid 100"), T0 + EventLimiter.REFILL.toNanos() / 2));
        assertTrue(limiter.admit(PodEvent.warning("Fenced", "pid 101"), T0 + EventLimiter.REFILL.toNanos()));
        assertFalse(limiter.admit(PodEvent.warning("Fenced", "pid 102"), T0 + EventLimiter.REFILL.toNanos()));
    }

    @Test
    void theSameEventIsNotSentAgainWithinTheRepeatWindow() {
        EventLimiter limiter = new EventLimiter();
        PodEvent elected = PodEvent.normal("Elected", "elected: lilbee may start");
        assertTrue(limiter.admit(elected, T0));
        assertFalse(limiter.admit(elected, T0 + Duration.ofMinutes(9).toNanos()));
        assertTrue(limiter.admit(PodEvent.normal("SteppedDown", "stepped down, as asked"), T0 + Duration.ofMinutes(9).toNanos()));
        assertTrue(limiter.admit(elected, T0 + EventLimiter.REPEAT.toNanos()));
    }
}
