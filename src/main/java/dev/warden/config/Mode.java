package dev.warden.config;

/** What {@code warden serve} does with lilbee's server lock. */
public enum Mode {
    /** Hold {@code server.lock} (and the scope lock) itself: one ready engine pod per data dir. */
    HOLD,
    /** Hold only its own gate lock, so one pod's {@code lilbee serve} starts and holds {@code server.lock}. */
    GATE;

    /** The name users write: {@code hold} or {@code gate}. */
    public String label() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
