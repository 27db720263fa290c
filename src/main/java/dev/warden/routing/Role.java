package dev.warden.routing;

/**
 * Whether clients are sent to this pod when the Service routes by role: primary exactly while {@code /q/health/ready}
 * is UP (in gate mode: elected, its lilbee proven on {@code server.lock} and answering), so the two never disagree; the
 * serving warden writes its pod in the Service's Endpoints, and {@code GET /api/v1/role} says it.
 */
public enum Role {
    PRIMARY("primary"),
    STANDBY("standby");

    private final String value;

    Role(String value) {
        this.value = value;
    }

    /** As {@code GET /api/v1/role} says it. */
    public String value() {
        return value;
    }

    public static Role of(boolean ready) {
        return ready ? PRIMARY : STANDBY;
    }
}
