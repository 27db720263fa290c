package dev.warden.events;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Which Events go to the API server: a token bucket (a burst of {@link #BURST}, then one every {@link #REFILL}, as
 * client-go's spam filter keeps a recorder from flooding it), and an Event the same as one sent within
 * {@link #REPEAT} is not sent again. A neighbour that makes warden fence lilbee over and over costs the API server a
 * burst, then an Event a while. Time is given, never read.
 */
final class EventLimiter {

    static final int BURST = 25;
    static final Duration REFILL = Duration.ofSeconds(30);
    static final Duration REPEAT = Duration.ofMinutes(10);
    /** The Events remembered for {@link #REPEAT}: the oldest is forgotten first. */
    private static final int REMEMBERED = 64;

    private double tokens = BURST;
    private long refilledAt;
    private boolean started;
    private final Map<PodEvent, Long> sent = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<PodEvent, Long> eldest) {
            return size() > REMEMBERED;
        }
    };

    /** Whether {@code event} may be sent at {@code nanos} (a monotonic reading); counts it when so. */
    synchronized boolean admit(PodEvent event, long nanos) {
        if (!started) {
            started = true;
            refilledAt = nanos;
        }
        tokens = Math.min(BURST, tokens + (double) (nanos - refilledAt) / REFILL.toNanos());
        refilledAt = nanos;
        Long last = sent.get(event);
        if (last != null && nanos - last < REPEAT.toNanos()) {
            return false;
        }
        if (tokens < 1) {
            return false;
        }
        tokens--;
        sent.put(event, nanos);
        return true;
    }
}
