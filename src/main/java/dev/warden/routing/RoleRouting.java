package dev.warden.routing;

import dev.warden.config.WardenConfig;
import dev.warden.health.LockReadinessCheck;
import io.quarkus.runtime.ShutdownEvent;
import jakarta.annotation.Priority;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/**
 * Role routing ({@code warden.gate.routing=role}) for this run: the label on warden's own pod follows readiness. Its
 * stop comes first when warden stops, before the gate keeper lets lilbee go: clients are sent elsewhere first.
 */
@Singleton
public class RoleRouting {

    /** How often readiness is looked at: the gate keeper's round. */
    private static final Duration INTERVAL = Duration.ofMillis(50);
    private static final Duration RETRY = Duration.ofSeconds(1);
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(2);

    private final LockReadinessCheck readiness;
    private RoleKeeper keeper;
    private ApiServerPodLabel label;

    public RoleRouting(@Readiness LockReadinessCheck readiness) {
        this.readiness = readiness;
    }

    /**
     * Starts keeping the label, as {@code role} says.
     *
     * @throws IllegalArgumentException warden cannot name its pod or the label: the message says what to set
     */
    public synchronized void start(WardenConfig.Gate.Role role, Map<String, String> env) {
        label = ApiServerPodLabel.connect(role.label(), role.pod(), role.namespace(), env, REQUEST_TIMEOUT);
        keeper = new RoleKeeper(label, this::ready, INTERVAL, RETRY);
        keeper.start();
    }

    /** The role the API server last took for this pod; empty without role routing, or before its first answer. */
    public synchronized Optional<Role> applied() {
        return Optional.ofNullable(keeper).map(RoleKeeper::applied);
    }

    /** Whether this pod serves, as readiness says: the role. */
    public boolean ready() {
        return readiness.call().getStatus() == HealthCheckResponse.Status.UP;
    }

    void onShutdown(@Observes @Priority(1) ShutdownEvent event) {
        RoleKeeper running;
        synchronized (this) {
            running = keeper;
        }
        if (running != null) {
            running.stop();
            label.close();
        }
    }
}
