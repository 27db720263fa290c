package dev.warden.gate;

import dev.warden.lock.FileId;
import dev.warden.time.Moment;
import java.time.Duration;
import java.util.Optional;

/**
 * Where this warden stands, all the gate remembers from one round to the next: standing by or elected, and the watch
 * on the gate file. Every value is immutable; {@link GateDecision#step} returns the next one.
 */
public sealed interface GatePhase {

    /** The gate file at the path, as this warden has watched it, and since when it has seen that very file there. */
    Watch watch();

    /**
     * The end of the last permit this warden gave (or its supervisor said it holds): until then, and the longest a
     * lilbee outlives its permit after, a lilbee may run on this warden's word. The Lease is not let go before.
     */
    Moment permitsEnd();

    /**
     * A fresh warden: standing by, watching the gate file from {@code now}. Its previous run (a restart in place) may have
     * given a permit just before it went, which ends {@code permit} from now at the latest: that is where its permits
     * end, whatever a supervisor reports or fails to.
     */
    static GatePhase begin(Optional<FileId> gateAtPath, Moment now, Duration permit) {
        return new Standby(new Watch(gateAtPath, now), now, now.plus(permit), now);
    }

    /**
     * The gate file at the path ({@code file}, empty: none), seen there by this warden at every round since
     * {@code since}. A file new to it may have replaced one that another pod's lilbee still holds the gate on.
     */
    record Watch(Optional<FileId> file, Moment since) {

        /** This round's look: the same file keeps the watch; another (or none) starts it again. */
        public Watch next(Optional<FileId> seen, Moment now) {
            return seen.equals(file) ? this : new Watch(seen, now);
        }

        public Duration age(Moment now) {
            return now.since(since);
        }
    }

    /**
     * Not elected since {@code since}: another warden holds the gate, or this one does not lead the Lease.
     *
     * @param contendFrom when this warden contends for the gate again: after a handover, not before a standby waiting
     *     for it has taken it (the kernel wakes a waiter, but a lock asked for again at once may win first)
     */
    record Standby(Watch watch, Moment since, Moment permitsEnd, Moment contendFrom, Optional<Leaving> leaving)
            implements GatePhase {

        Standby(Watch watch, Moment since, Moment permitsEnd) {
            this(watch, since, permitsEnd, since);
        }

        Standby(Watch watch, Moment since, Moment permitsEnd, Moment contendFrom) {
            this(watch, since, permitsEnd, contendFrom, Optional.empty());
        }
    }

    /**
     * This pod's lilbee, serving when this warden stepped down, and the gate file whose lock it holds (its supervisor
     * passed the open file on): the lock is kept, retired, until that instance has let server.lock go, then unlocked
     * for it too, so a standby is elected while it exits rather than after.
     */
    record Leaving(Proven lilbee, FileId gate) {
    }

    /**
     * Elected since {@code since}.
     *
     * @param settleUntil when this pod's first lilbee may start, if the election had to settle
     * @param proven the lilbee instance proven to hold the server.lock at the path, and that file: one that later
     *     holds a file no longer at the path serves a data dir nobody else can see
     * @param unservedSince since when this pod may serve but does not: the gate goes to a standby after
     *     {@link GateTimings#handoverAfter()}
     */
    record Elected(Watch watch, Moment since, Optional<Moment> settleUntil, Optional<Proven> proven,
            Optional<Moment> unservedSince, Moment permitsEnd) implements GatePhase {
    }

    /** A lilbee instance (pid and start time) and the server.lock file it was proven to hold. */
    record Proven(long pid, long startTicks, FileId file) {
    }
}
