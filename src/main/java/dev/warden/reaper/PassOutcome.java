package dev.warden.reaper;

/**
 * What one pass of the last-user-out rule decided.
 *
 * @param action what the pass did (or, in a dry run, would do)
 * @param detail why, for logs, status and {@code reap --once}
 */
public record PassOutcome(Action action, String detail) {

    public enum Action {
        /** A user holds the engine: the idle clock restarts. */
        USERS_LIVE,
        /** Another process holds the build lock: looked again next pass. */
        BUILD_LOCK_HELD,
        /** No user and no engine: nothing to do. */
        NOTHING_TO_DO,
        /** A kept-warm engine idles; its weights stay until the idle time passes. */
        IDLING,
        /** A kept-warm engine's weights were already unloaded; watching. */
        UNLOADED_EARLIER,
        UNLOADED,
        /** The unload was refused; a new idle window starts. */
        UNLOAD_REFUSED,
        STOPPED,
        /** warden is shutting down: the pass ended where it was, signalling and deleting nothing more. */
        INTERRUPTED,
    }

    /** Whether the pass changed something worth remembering as the last action. */
    public boolean acted() {
        return action == Action.UNLOADED || action == Action.UNLOAD_REFUSED || action == Action.STOPPED;
    }
}
