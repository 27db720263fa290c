package dev.warden.gate;

import java.time.Instant;
import java.util.Optional;
import java.util.OptionalLong;

/** Where this warden stands in the election, as published to the probes and status. */
public sealed interface GateState {

    /** A label for probes and status: waiting, elected, standby, error. */
    String label();

    /** Since when this state holds, where it has a moment. */
    default Optional<Instant> changedAt() {
        return switch (this) {
            case Elected elected -> Optional.of(elected.since());
            case Standby standby -> Optional.of(standby.since());
            case Failed failed -> Optional.of(failed.since());
            case Waiting waiting -> Optional.empty();
        };
    }

    /** The gate's holder: a {@link Standby} that can see it says (its own component); nobody else knows. */
    default OptionalLong holderPid() {
        return this instanceof Standby standby ? standby.holderPid() : OptionalLong.empty();
    }

    /** Why, for an error or a wait not yet begun. */
    default Optional<String> detail() {
        return switch (this) {
            case Failed failed -> Optional.of(failed.message());
            case Waiting waiting -> Optional.of(waiting.reason());
            default -> Optional.empty();
        };
    }

    /** Not tried yet. */
    record Waiting(String reason) implements GateState {
        public String label() {
            return "waiting";
        }
    }

    /** This warden holds the gate since {@code since}. */
    record Elected(Instant since) implements GateState {
        public String label() {
            return "elected";
        }
    }

    /** Another warden holds the gate ({@code holderPid} where this pod can see it), or the Lease: this one waits. */
    record Standby(Instant since, OptionalLong holderPid) implements GateState {
        public String label() {
            return "standby";
        }
    }

    /** The gate cannot be taken at all; the message says why and what to do. */
    record Failed(Instant since, String message) implements GateState {
        public String label() {
            return "error";
        }
    }
}
