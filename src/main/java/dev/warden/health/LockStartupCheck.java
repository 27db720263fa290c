package dev.warden.health;

import dev.warden.config.WardenConfig;
import dev.warden.gate.GateSnapshot;
import dev.warden.gate.pod.GateKeeper;
import dev.warden.hold.HoldSnapshot;
import dev.warden.hold.LockKeeper;
import dev.warden.keeper.KeeperPhase;
import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Startup;

/**
 * Started once warden holds its locks (with {@code warden.startup.require-lock}, the default), so
 * a native sidecar keeps the engine container from starting in a pod that does not hold them;
 * otherwise as soon as warden serves. In gate mode, started once the gate keeper runs: lilbee's supervisor then
 * starts, and runs lilbee only when warden's switch says it may.
 */
@Startup
@ApplicationScoped
public class LockStartupCheck implements HealthCheck {

    private final LockKeeper keeper;
    private final GateKeeper gate;
    private final WardenConfig config;

    public LockStartupCheck(LockKeeper keeper, GateKeeper gate, WardenConfig config) {
        this.keeper = keeper;
        this.gate = gate;
        this.config = config;
    }

    @Override
    public HealthCheckResponse call() {
        GateSnapshot gated = gate.snapshot();
        if (GateHealth.active(gated)) {
            return GateHealth.startup(gated);
        }
        HoldSnapshot snapshot = keeper.snapshot();
        boolean requireLock = config.startup().requireLock();
        boolean started = requireLock ? snapshot.everHeldAll() : snapshot.phase() != KeeperPhase.NOT_STARTED;
        return HealthCheckResponse.named("locks-startup").status(started)
                .withData("require-lock", requireLock)
                .build();
    }
}
