package dev.warden.health;

import dev.warden.gate.GateSnapshot;
import dev.warden.gate.GateState;
import dev.warden.gate.ServerLockState;
import dev.warden.gate.pod.LilbeeAnswers;
import dev.warden.keeper.KeeperPhase;
import java.util.Optional;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.HealthCheckResponseBuilder;

/** The probes' answers in gate mode, from the gate keeper's published snapshot. */
final class GateHealth {

    private GateHealth() {
    }

    /** Whether the gate keeper runs: {@code serve} chose gate mode. */
    static boolean active(GateSnapshot snapshot) {
        return snapshot.phase() != KeeperPhase.NOT_STARTED;
    }

    /** Ready while this pod's lilbee holds {@code server.lock} (and, with a health URL, answers). */
    static HealthCheckResponse readiness(GateSnapshot snapshot, LilbeeAnswers lilbee) {
        boolean up = snapshot.serving();
        HealthCheckResponseBuilder response = HealthCheckResponse.named("gate");
        if (up) {
            Optional<LilbeeAnswers.Answer> answer = lilbee.look(snapshot.server().holderPid().orElse(0));
            if (answer.isPresent()) {
                up = answer.get().answers();
                response.withData("lilbee.url", lilbee.url().orElseThrow().toString())
                        .withData("lilbee.answer", answer.get().detail());
            }
        }
        describe(response, snapshot);
        return response.status(up && snapshot.phase() == KeeperPhase.RUNNING).build();
    }

    /**
     * Started once the gate keeper runs and its switch socket listens: lilbee's container may start then, and its
     * supervisor waits there for warden's word. Whether lilbee runs is that word's to say, never this probe's.
     */
    static HealthCheckResponse startup(GateSnapshot snapshot) {
        HealthCheckResponseBuilder response = HealthCheckResponse.named("gate-startup")
                .status(snapshot.phase() == KeeperPhase.RUNNING);
        response.withData("gate.state", snapshot.gate().label());
        snapshot.note().ifPresent(n -> response.withData("note", n));
        return response.build();
    }

    private static void describe(HealthCheckResponseBuilder response, GateSnapshot snapshot) {
        response.withData("mode", "gate").withData("started", snapshot.started());
        snapshot.gateLock().ifPresent(p -> response.withData("gate.path", p.toString()));
        GateState gate = snapshot.gate();
        response.withData("gate.state", gate.label());
        gate.changedAt().ifPresent(t -> response.withData("gate.since", t.toString()));
        gate.holderPid().ifPresent(pid -> response.withData("gate.holder-pid", pid));
        gate.detail().ifPresent(d -> response.withData("gate.detail", d));
        ServerLockState lock = snapshot.server();
        snapshot.serverLock().ifPresent(p -> response.withData("server-lock.path", p.toString()));
        response.withData("server-lock.state", lock.label());
        lock.holderPid().ifPresent(pid -> response.withData("server-lock.holder-pid", pid));
        lock.error().ifPresent(e -> response.withData("server-lock.error", e));
        if (lock instanceof ServerLockState.InPod inPod && inPod.replacedFile()) {
            response.withData("server-lock.file", "deleted or replaced since it was taken");
        }
        snapshot.lease().ifPresent(lease -> {
            response.withData("lease.name", lease.name()).withData("lease.identity", lease.identity())
                    .withData("lease.leading", lease.leading());
            lease.holder().ifPresent(h -> response.withData("lease.holder", h));
        });
        snapshot.note().ifPresent(n -> response.withData("note", n));
    }
}
