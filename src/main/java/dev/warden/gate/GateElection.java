package dev.warden.gate;

import dev.warden.time.Moment;
import dev.warden.time.MonotonicClock;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * An election the gate lock is contended for under, in lease mode: the gate keeper asks it each
 * round whether this warden leads, and closes it (stepping down) when it stops.
 */
public interface GateElection extends AutoCloseable {

    /**
     * While this warden leads: the moment its lead ends unless renewed, on the monotonic clock (its last renewal the
     * API server took, plus the renew deadline). A permit it gives never lasts longer.
     */
    Optional<Moment> leadingUntil();

    /** Whether this warden holds the election now. */
    default boolean leading() {
        return leadingUntil().filter(MonotonicClock.SYSTEM.now()::isBefore).isPresent();
    }

    /** The name of what is held (the Lease's), for messages. */
    String name();

    /** Who this warden is in the election. */
    String identity();

    /**
     * Whether the election has had its first answer since it began, or waited a request's time for it: until
     * then "not leading" may mean only "not asked yet", and a warden restarted beside its serving lilbee must
     * not fence it for that.
     */
    default boolean decided() {
        return true;
    }

    /**
     * Lets the election go (releasing what is held) and stays out of it long enough for another contender to
     * win it, then contends again: the gate keeper hands over this way when its pod cannot serve.
     */
    default void stepAside() {
    }

    /** Who holds it, as last seen. */
    Optional<String> holder();

    /** When its holder last renewed it, as last read or written: what shows a holder that stopped renewing. */
    default Optional<Instant> renewed() {
        return Optional.empty();
    }

    /**
     * How long the election has gone without contending, once that is longer than {@code patience} and
     * than it ever goes while it works; empty while it works, for the liveness probe.
     */
    Optional<Duration> stalled(Duration patience);

    /** Steps down and stops contending, letting the Lease go. */
    @Override
    default void close() {
        close(true);
    }

    /**
     * Stops contending; with {@code letGo}, releases what is held (another contender may take it at once), else leaves
     * it to expire.
     */
    void close(boolean letGo);
}
