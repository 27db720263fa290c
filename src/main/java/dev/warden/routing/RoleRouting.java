package dev.warden.routing;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.warden.config.WardenConfig;
import dev.warden.kube.OwnPod;
import dev.warden.health.LockReadinessCheck;
import io.quarkus.runtime.ShutdownEvent;
import jakarta.annotation.Priority;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/**
 * Role routing ({@code warden.gate.routing=role}) for this run: the Service's Endpoints follows readiness. Its stop comes
 * first when warden stops, before the gate keeper lets lilbee go: clients are sent elsewhere first.
 */
@Singleton
public class RoleRouting {

    /** How often readiness is looked at: the gate keeper's round. */
    private static final Duration INTERVAL = Duration.ofMillis(50);
    /** How often a serving warden reads the Endpoints again: a warden that lost the gate may have written itself in. */
    private static final Duration RESYNC = Duration.ofSeconds(1);
    private static final Duration RETRY = Duration.ofSeconds(1);
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(2);

    private final LockReadinessCheck readiness;
    private final ObjectMapper json;
    private RoleKeeper keeper;
    private ApiServerEndpoints endpoints;

    public RoleRouting(@Readiness LockReadinessCheck readiness, ObjectMapper json) {
        this.readiness = readiness;
        this.json = json;
    }

    /**
     * Starts keeping the Endpoints, as {@code role} says.
     *
     * @throws IllegalArgumentException warden cannot name its pod, its address, the Endpoints or its ports: the
     *     message says what to set
     */
    public synchronized void start(WardenConfig.Gate.Role role, Map<String, String> env) {
        String name = role.endpoints().map(String::strip).filter(n -> !n.isEmpty()).orElseThrow(() -> new IllegalArgumentException(
                "role routing writes the Service's Endpoints, but warden.gate.role.endpoints does not name it: set it to"
                        + " the Service's name (the chart does)"));
        List<ApiServerEndpoints.Port> ports = role.ports().orElse(List.of()).stream().filter(p -> !p.isBlank())
                .map(ApiServerEndpoints.Port::of).toList();
        String address = role.address().or(() -> Optional.ofNullable(env.get("POD_IP"))).map(String::strip)
                .filter(a -> !a.isEmpty()).orElseThrow(() -> new IllegalArgumentException("role routing writes this pod's"
                        + " address in the Service's Endpoints, but warden does not know it: set POD_IP from the downward"
                        + " API (fieldRef status.podIP; the chart does) or warden.gate.role.address"));
        OwnPod pod = OwnPod.connect(role.pod(), role.namespace(), env, REQUEST_TIMEOUT, "role routing names this pod");
        try {
            endpoints = ApiServerEndpoints.of(pod, json, name, ports, address,
                    Optional.ofNullable(env.get("NODE_NAME")).map(String::strip));
        } catch (IllegalArgumentException e) {
            pod.close();
            throw e;
        }
        keeper = new RoleKeeper(endpoints, this::ready, INTERVAL, RESYNC, RETRY);
        keeper.start();
    }

    /**
     * Whether the Endpoints routed here ({@link Role#PRIMARY}) as this warden last read or wrote it; empty without
     * role routing, or before its first answer.
     */
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
            endpoints.close();
        }
    }
}
