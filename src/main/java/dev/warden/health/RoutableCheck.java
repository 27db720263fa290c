package dev.warden.health;

import dev.warden.gate.GateSnapshot;
import dev.warden.gate.GateState;
import dev.warden.gate.pod.GateKeeper;
import dev.warden.keeper.KeeperPhase;
import io.smallrye.health.api.HealthGroup;
import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/**
 * {@code /q/health/group/routable}, role routing's readiness ({@code warden.gate.routing=role}): UP for a pod that
 * serves and for a healthy standby, whose warden runs its gate keeper and could serve at once if elected (it has
 * watched the gate file for the settle; not DOWN for another pod holding the gate, as {@code /q/health/ready} is).
 * Everyday tools then see every healthy replica Ready, while the Service selects the serving pod by the label warden
 * keeps. In hold mode it answers as readiness does.
 */
@HealthGroup("routable")
@ApplicationScoped
public class RoutableCheck implements HealthCheck {

    private final GateKeeper gate;
    private final LockReadinessCheck readiness;

    public RoutableCheck(GateKeeper gate, @Readiness LockReadinessCheck readiness) {
        this.gate = gate;
        this.readiness = readiness;
    }

    @Override
    public HealthCheckResponse call() {
        GateSnapshot snapshot = gate.snapshot();
        if (!GateHealth.active(snapshot)) {
            return readiness.call();
        }
        // A standby is routable once it could serve at once if elected: a fresh one waits out the settle first, which a
        // rolling update would otherwise count as a standby ready to take over.
        boolean canTakeOver = snapshot.gate() instanceof GateState.Elected || snapshot.settled();
        boolean up = snapshot.phase() == KeeperPhase.RUNNING && !(snapshot.gate() instanceof GateState.Failed)
                && canTakeOver;
        return HealthCheckResponse.named("gate-routable").status(up).withData("gate.state", snapshot.gate().label())
                .withData("serving", snapshot.serving()).withData("settled", snapshot.settled()).build();
    }
}
