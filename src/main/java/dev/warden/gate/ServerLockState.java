package dev.warden.gate;

import java.util.Optional;
import java.util.OptionalLong;

/** What this warden knows of lilbee's {@code server.lock}, which in gate mode it never holds. */
public sealed interface ServerLockState {

    /** A label for probes and status. */
    String label();

    /** The holder in this pod, while there is one. */
    default OptionalLong holderPid() {
        return this instanceof InPod inPod ? OptionalLong.of(inPod.pid()) : OptionalLong.empty();
    }

    /** Why it cannot be looked at. */
    default Optional<String> error() {
        return this instanceof Failed failed ? Optional.of(failed.message()) : Optional.empty();
    }

    /**
     * Held by this pod's lilbee (the process its supervisor runs).
     *
     * @param replacedFile the lock is on a file no longer at the path (a {@code lilbee reset} clears the data dir)
     */
    record InPod(long pid, boolean replacedFile) implements ServerLockState {
        public String label() {
            return "held-in-pod";
        }
    }

    /** Not held by this pod's lilbee; not looked at more closely (a standby does not need to know). */
    record NotInPod() implements ServerLockState {
        public String label() {
            return "not-held-in-pod";
        }
    }

    /** Nobody holds it (or its file does not exist yet). */
    record Free() implements ServerLockState {
        public String label() {
            return "free";
        }
    }

    /** Held by a process that is not this pod's lilbee: a stray server, or another pod's. */
    record HeldOutside() implements ServerLockState {
        public String label() {
            return "held-outside-pod";
        }
    }

    /** It cannot be looked at; the message says why. */
    record Failed(String message) implements ServerLockState {
        public String label() {
            return "error";
        }
    }
}
