package dev.warden.hold;

/** The locks warden holds for a lilbee server, in the order they are taken, and the gate of gate mode. */
public enum LockKind {
    /** {@code <scope dir>/server.scope.lock}: one server per shared scope. Taken first. */
    SCOPE("scope"),
    /** {@code <data dir>/server.lock}: one server per data dir. */
    DATA_DIR("data-dir"),
    /** {@code <data dir>/warden-gate.lock}: in gate mode, the pod whose warden holds it may run lilbee. */
    GATE("gate");

    private final String label;

    LockKind(String label) {
        this.label = label;
    }

    /** The name used in probes, status output and logs. */
    public String label() {
        return label;
    }
}
