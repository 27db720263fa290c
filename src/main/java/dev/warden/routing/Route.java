package dev.warden.routing;

import java.util.LinkedHashSet;
import java.util.Optional;
import java.util.Set;

/**
 * What the Service's Endpoints should route to, decided from what it routes to now: the one pure rule of role routing.
 * Whoever serves writes itself in alone (so a pod whose warden died while serving is dropped by its successor's first
 * write, not by an orderly stop of its own); a pod that does not serve takes only itself out, and never writes another
 * pod in or out.
 */
public final class Route {

    private Route() {
    }

    /**
     * The addresses to write, or empty to leave the Endpoints as it is.
     *
     * @param serving whether this pod serves (its readiness, {@code /q/health/ready})
     * @param own this pod's address
     * @param routed the addresses the Endpoints routes to now
     */
    public static Optional<Set<String>> next(boolean serving, String own, Set<String> routed) {
        if (serving) {
            return routed.equals(Set.of(own)) ? Optional.empty() : Optional.of(Set.of(own));
        }
        if (!routed.contains(own)) {
            return Optional.empty();
        }
        Set<String> others = new LinkedHashSet<>(routed);
        others.remove(own);
        return Optional.of(others);
    }
}
