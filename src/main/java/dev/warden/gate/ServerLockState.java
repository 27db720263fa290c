package dev.warden.gate;

import java.time.Instant;
import java.util.Optional;
import java.util.OptionalLong;

/** What this warden knows of lilbee's {@code server.lock}, which in gate mode it never holds. */
public sealed interface ServerLockState {

    /** A label for probes and status. */
    String label();

    /** Since when this state holds, where it has a moment. */
    default Optional<Instant> changedAt() {
        return switch (this) {
            case InPod inPod -> Optional.of(inPod.since());
            case Free free -> Optional.of(free.since());
            case HeldOutside outside -> Optional.of(outside.since());
            case Failed failed -> Optional.of(failed.since());
            case NotInPod notInPod -> Optional.empty();
        };
    }

    /** The holder in this pod, while there is one. */
    default OptionalLong holderPid() {
        return this instanceof InPod inPod ? OptionalLong.of(inPod.pid()) : OptionalLong.empty();
    }

    /** Why it cannot be looked at. */
    default Optional<String> error() {
        return this instanceof Failed failed ? Optional.of(failed.message()) : Optional.empty();
    }

    /**
     * Held by a process this pod can see, other than warden: this pod's lilbee serves.
     *
     * @param replacedFile the lock is on a file no longer at the path (a {@code lilbee reset} clears the data dir)
     */
    record InPod(long pid, Instant since, boolean replacedFile) implements ServerLockState {
        public String label() {
            return "held-in-pod";
        }
    }

    /** Not held by any process of this pod; not looked at more closely (a standby does not need to know). */
    record NotInPod() implements ServerLockState {
        public String label() {
            return "not-held-in-pod";
        }
    }

    /** Nobody holds it (or its file does not exist yet). */
    record Free(Instant since) implements ServerLockState {
        public String label() {
            return "free";
        }
    }

    /** Held by a process this pod cannot see: another pod's lilbee, a stray server, or one whose warden restarted. */
    record HeldOutside(Instant since) implements ServerLockState {
        public String label() {
            return "held-outside-pod";
        }
    }

    /** It cannot be looked at; the message says why. */
    record Failed(Instant since, String message) implements ServerLockState {
        public String label() {
            return "error";
        }
    }
}
