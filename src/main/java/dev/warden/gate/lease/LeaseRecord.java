package dev.warden.gate.lease;

import dev.warden.time.Moment;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * What a coordination.k8s.io/v1 Lease says of its election, as client-go's leader election reads and writes it, and
 * the one decision an elector makes of it ({@link #next}). A Lease no one has held yet (the chart makes it with only its
 * duration) reads as free: no holder, its times the epoch.
 *
 * @param holder who holds it; empty: no one (never held, or released)
 * @param duration how long it lasts unrenewed; empty: not given (the elector's own then counts)
 * @param acquireTime when its holder took it
 * @param renewTime when its holder last renewed it
 * @param transitions how many times it has changed hands
 */
public record LeaseRecord(Optional<String> holder, Optional<Duration> duration, Optional<Instant> acquireTime,
        Optional<Instant> renewTime, int transitions) {

    /** The record a leader writes to let the Lease go: no holder, lasting a second, as client-go releases it. */
    public LeaseRecord released(Instant now) {
        return new LeaseRecord(Optional.empty(), Optional.of(Duration.ofSeconds(1)), Optional.of(now), Optional.of(now),
                transitions);
    }

    /**
     * client-go's tryAcquireOrRenew, decided: what {@code identity} writes to take or renew this Lease (as read now),
     * or empty while another holds it. Another's hold counts from when this elector first saw the Lease as it is now
     * ({@code observedAt}, on its own monotonic clock), never from the renewal time written in it (another node's
     * clock): the Lease is free once it has gone unchanged for its duration as this elector watched it.
     *
     * @param ownDuration what this elector writes as the duration, and counts for a Lease that names none
     * @param wallNow the acquire and renew times written (shown to people and other tools, never counted on)
     */
    public Optional<LeaseRecord> next(String identity, Duration ownDuration, Moment observedAt, Moment now, Instant wallNow) {
        boolean mine = holder.filter(identity::equals).isPresent();
        if (holder.isPresent() && !mine && now.isBefore(observedAt.plus(duration.orElse(ownDuration)))) {
            return Optional.empty();
        }
        return Optional.of(new LeaseRecord(Optional.of(identity), Optional.of(ownDuration),
                mine ? acquireTime.or(() -> Optional.of(wallNow)) : Optional.of(wallNow), Optional.of(wallNow),
                mine ? transitions : transitions + 1));
    }

    /** A new Lease's record, {@code identity} holding it from {@code wallNow}. */
    public static LeaseRecord first(String identity, Duration duration, Instant wallNow) {
        return new LeaseRecord(Optional.of(identity), Optional.of(duration), Optional.of(wallNow), Optional.of(wallNow), 0);
    }
}
