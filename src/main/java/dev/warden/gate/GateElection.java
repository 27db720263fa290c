package dev.warden.gate;

import java.time.Duration;
import java.util.Optional;

/**
 * An election the gate lock is contended for under, in lease mode: the gate keeper asks it each
 * round whether this warden leads, and closes it (stepping down) when it stops.
 */
public interface GateElection extends AutoCloseable {

    /**
     * The election as the gate sees it this round, from one read: whether this warden leads and until when (its last
     * renewal the API server took, plus the renew deadline; a permit it gives never lasts longer), whether the first
     * read has been answered, who holds it and when it was last renewed. Reading it changes nothing.
     */
    Observation.Lease look();

    /** The name of what is held (the Lease's), for messages. */
    String name();

    /** Who this warden is in the election. */
    String identity();

    /**
     * Lets the election go (releasing what is held) and stays out of it long enough for another contender to
     * win it, then contends again: the gate keeper hands over this way when its pod cannot serve.
     */
    default void stepAside() {
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
