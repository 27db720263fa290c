package dev.warden.health;

import dev.warden.gate.GateSnapshot;
import dev.warden.gate.pod.GateKeeper;
import dev.warden.gate.pod.LilbeeAnswers;
import dev.warden.hold.HoldSnapshot;
import dev.warden.hold.LockKeeper;
import dev.warden.hold.LockState;
import dev.warden.hold.LockStatus;
import dev.warden.keeper.KeeperPhase;
import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.HealthCheckResponseBuilder;
import org.eclipse.microprofile.health.Readiness;

/**
 * Ready only while warden holds every configured lock: a standby pod stays out of the Service
 * until the holder dies. In gate mode, ready while this pod's lilbee holds {@code server.lock}.
 * Answers from the keepers' published snapshots, without file I/O.
 */
@Readiness
@ApplicationScoped
public class LockReadinessCheck implements HealthCheck {

    private final LockKeeper keeper;
    private final GateKeeper gate;
    private final LilbeeAnswers lilbee;

    public LockReadinessCheck(LockKeeper keeper, GateKeeper gate, LilbeeAnswers lilbee) {
        this.keeper = keeper;
        this.gate = gate;
        this.lilbee = lilbee;
    }

    @Override
    public HealthCheckResponse call() {
        GateSnapshot gated = gate.snapshot();
        if (GateHealth.active(gated)) {
            return GateHealth.readiness(gated, lilbee);
        }
        HoldSnapshot snapshot = keeper.snapshot();
        HealthCheckResponseBuilder response = HealthCheckResponse.named("locks").status(snapshot.allHeld());
        if (snapshot.phase() != KeeperPhase.RUNNING) {
            return response.withData("state", snapshot.phase() == KeeperPhase.STOPPED ? "stopped" : "not serving")
                    .build();
        }
        for (LockStatus lock : snapshot.locks()) {
            describe(response, lock);
        }
        return response.build();
    }

    static void describe(HealthCheckResponseBuilder response, LockStatus lock) {
        String key = lock.kind().label();
        response.withData(key + ".path", lock.path().toString());
        response.withData(key + ".state", lock.state().label());
        switch (lock.state()) {
            case LockState.Held held -> response.withData(key + ".since", held.since().toString());
            case LockState.HeldElsewhere elsewhere -> {
                response.withData(key + ".since", elsewhere.since().toString());
                elsewhere.holderPid().ifPresent(pid -> response.withData(key + ".holder-pid", pid));
                if (lock.kind() == dev.warden.hold.LockKind.SCOPE) {
                    if (elsewhere.owner().known()) {
                        response.withData(key + ".owner.data-dir", elsewhere.owner().dataDir().orElseThrow());
                        elsewhere.owner().pid().ifPresent(pid -> response.withData(key + ".owner.pid", pid));
                    } else {
                        response.withData(key + ".owner", "unknown");
                    }
                }
            }
            case LockState.Failed failed -> {
                response.withData(key + ".since", failed.since().toString());
                response.withData(key + ".error", failed.message());
            }
            case LockState.Waiting waiting -> response.withData(key + ".waiting", waiting.reason());
            case LockState.Proving proving -> {
                response.withData(key + ".since", proving.since().toString());
                response.withData(key + ".proving", proving.why());
            }
            case LockState.Shared shared -> {
                response.withData(key + ".since", shared.since().toString());
                response.withData(key + ".error", shared.why());
            }
        }
    }
}
