package dev.warden.health;

import dev.warden.gate.GateSnapshot;
import dev.warden.gate.GateState;
import dev.warden.gate.LilbeeAnswers;
import dev.warden.gate.ServerLockState;
import dev.warden.hold.HoldSnapshot;
import java.util.Optional;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.HealthCheckResponseBuilder;

/** The probes' answers in gate mode, from the gate keeper's published snapshot. */
final class GateHealth {

    private GateHealth() {
    }

    /** Whether the gate keeper runs: {@code serve} chose gate mode. */
    static boolean active(GateSnapshot snapshot) {
        return snapshot.phase() != HoldSnapshot.Phase.NOT_STARTED;
    }

    /** Ready while this pod's lilbee holds {@code server.lock} (and, with a health URL, answers). */
    static HealthCheckResponse readiness(GateSnapshot snapshot, LilbeeAnswers lilbee) {
        boolean up = snapshot.serving();
        HealthCheckResponseBuilder response = HealthCheckResponse.named("gate");
        if (up) {
            Optional<LilbeeAnswers.Answer> answer = lilbee.look();
            if (answer.isPresent()) {
                up = answer.get().answers();
                response.withData("lilbee.url", lilbee.url().orElseThrow().toString())
                        .withData("lilbee.answer", answer.get().detail());
            }
        }
        describe(response, snapshot);
        return response.status(up && snapshot.phase() == HoldSnapshot.Phase.RUNNING).build();
    }

    static HealthCheckResponse startup(GateSnapshot snapshot) {
        HealthCheckResponseBuilder response = HealthCheckResponse.named("gate-startup").status(snapshot.started());
        response.withData("gate.state", snapshot.gate().label());
        snapshot.note().ifPresent(n -> response.withData("note", n));
        return response.build();
    }

    private static void describe(HealthCheckResponseBuilder response, GateSnapshot snapshot) {
        response.withData("mode", "gate").withData("started", snapshot.started());
        snapshot.gateLock().ifPresent(p -> response.withData("gate.path", p.toString()));
        response.withData("gate.state", snapshot.gate().label());
        switch (snapshot.gate()) {
            case GateState.Elected elected -> response.withData("gate.since", elected.since().toString());
            case GateState.Standby standby -> {
                response.withData("gate.since", standby.since().toString());
                standby.holderPid().ifPresent(pid -> response.withData("gate.holder-pid", pid));
            }
            case GateState.Yielded yielded -> response.withData("gate.since", yielded.since().toString());
            case GateState.Failed failed -> response.withData("gate.since", failed.since().toString())
                    .withData("gate.error", failed.message());
            case GateState.Waiting waiting -> response.withData("gate.waiting", waiting.reason());
        }
        snapshot.serverLock().ifPresent(p -> response.withData("server-lock.path", p.toString()));
        response.withData("server-lock.state", snapshot.server().label());
        switch (snapshot.server()) {
            case ServerLockState.InPod inPod -> {
                response.withData("server-lock.holder-pid", inPod.pid()).withData("server-lock.since", inPod.since().toString());
                if (inPod.replacedFile()) {
                    response.withData("server-lock.file", "deleted or replaced since it was taken");
                }
            }
            case ServerLockState.Free free -> response.withData("server-lock.since", free.since().toString());
            case ServerLockState.HeldOutside outside -> response.withData("server-lock.since", outside.since().toString());
            case ServerLockState.Failed failed -> response.withData("server-lock.error", failed.message());
            case ServerLockState.NotInPod notInPod -> {
            }
        }
        snapshot.note().ifPresent(n -> response.withData("note", n));
    }
}
