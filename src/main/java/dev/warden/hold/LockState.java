package dev.warden.hold;

import java.time.Instant;
import java.util.OptionalLong;

/** What warden knows of one lock, as published to the probes. */
public sealed interface LockState {

    /** A label for probes and status: held, proving, shared, held-elsewhere, waiting, error. */
    String label();

    /** Not tried yet: a lock taken earlier in the order is not ours yet. */
    record Waiting(String reason) implements LockState {
        public String label() {
            return "waiting";
        }
    }

    /** Ours since {@code since}, after waiting {@code waited} for another holder (zero when it was free). */
    record Held(Instant since, java.time.Duration waited) implements LockState {
        public String label() {
            return "held";
        }
    }

    /**
     * Taken at once while its heartbeat names another holder that has not let go: held once that holder proves gone
     * (its heartbeat stays still), so a lock that did not reach another pod is never served twice.
     */
    record Proving(Instant since, String why) implements LockState {
        public String label() {
            return "proving";
        }
    }

    /**
     * Taken here, and held by another pod at once through a mount whose locks do not reach this one (its heartbeat
     * advances): that pod came first and serves; this warden stands by, holding it, while that pod beats.
     */
    record Shared(Instant since, String why) implements LockState {
        public String label() {
            return "shared";
        }
    }

    /** Another process holds it; warden waits in the kernel and takes it the moment it is free. */
    record HeldElsewhere(Instant since, OptionalLong holderPid, ScopeOwner owner) implements LockState {
        public String label() {
            return "held-elsewhere";
        }
    }

    /** It cannot be taken at all; the message says why and what to do. */
    record Failed(Instant since, String message) implements LockState {
        public String label() {
            return "error";
        }
    }
}
