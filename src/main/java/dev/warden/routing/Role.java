package dev.warden.routing;

/**
 * Which pod clients are sent to when the Service routes by role: the value of the label warden keeps on its own pod.
 * Primary exactly while {@code /q/health/ready} is UP (in gate mode: elected, its lilbee proven on {@code server.lock}
 * and answering), so the two never disagree.
 */
public enum Role {
    PRIMARY("primary"),
    STANDBY("standby");

    private final String value;

    Role(String value) {
        this.value = value;
    }

    /** The label's value. */
    public String value() {
        return value;
    }

    public static Role of(boolean ready) {
        return ready ? PRIMARY : STANDBY;
    }
}
