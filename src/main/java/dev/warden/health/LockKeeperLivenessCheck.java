package dev.warden.health;

import dev.warden.config.WardenConfig;
import dev.warden.gate.pod.GateKeeper;
import dev.warden.keeper.KeeperLoop;
import dev.warden.hold.LockKeeper;
import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Liveness;

/**
 * Alive while warden's own lock-keeping machinery works (the gate keeper's, in gate mode). Never DOWN because another process
 * holds a lock: a standby restarted for waiting would never get to take over.
 */
@Liveness
@ApplicationScoped
public class LockKeeperLivenessCheck implements HealthCheck {

    private final LockKeeper keeper;
    private final GateKeeper gate;
    private final WardenConfig config;

    public LockKeeperLivenessCheck(LockKeeper keeper, GateKeeper gate, WardenConfig config) {
        this.keeper = keeper;
        this.gate = gate;
        this.config = config;
    }

    @Override
    public HealthCheckResponse call() {
        KeeperLoop.KeeperHealth health = GateHealth.active(gate.snapshot())
                ? gate.health(config.liveness().stallTimeout())
                : keeper.health(config.liveness().stallTimeout());
        return HealthCheckResponse.named("lock-keeper").status(health.alive())
                .withData("detail", health.detail())
                .withData("since-last-round-ms", health.sinceLastRound().toMillis())
                .build();
    }
}
