package dev.warden.hold;

/** The locks warden holds for a lilbee server, in the order they are taken. */
public enum LockKind {
    /** {@code <scope dir>/server.scope.lock}: one server per shared scope. Taken first. */
    SCOPE("scope"),
    /** {@code <data dir>/server.lock}: one server per data dir. */
    DATA_DIR("data-dir");

    private final String label;

    LockKind(String label) {
        this.label = label;
    }

    /** The name used in probes, status output and logs. */
    public String label() {
        return label;
    }
}
