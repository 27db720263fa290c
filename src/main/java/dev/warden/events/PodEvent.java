package dev.warden.events;

import dev.warden.lock.LockReach;
import java.util.Optional;

/**
 * A Kubernetes Event on warden's own pod: {@code reason} in UpperCamelCase (what {@code kubectl get events} lists),
 * {@code Warning} or {@code Normal}, and a sentence saying what happened and why.
 */
public record PodEvent(String reason, boolean warning, String message) {

    public static PodEvent normal(String reason, String message) {
        return new PodEvent(reason, false, message);
    }

    public static PodEvent warning(String reason, String message) {
        return new PodEvent(reason, true, message);
    }

    /**
     * The Event of a change in what a lock's heartbeat shows: a warning while another pod holds the same lock through a
     * mount whose locks do not reach this one (the one of the two that came later stands by); nothing otherwise.
     */
    public static Optional<PodEvent> ofReach(LockReach.Verdict verdict) {
        boolean notExclusive = verdict instanceof LockReach.Verdict.Shared
                || verdict instanceof LockReach.Verdict.Proven proven && proven.overlapped();
        return notExclusive ? Optional.of(warning("LockNotExclusive", verdict.why())) : Optional.empty();
    }
}
