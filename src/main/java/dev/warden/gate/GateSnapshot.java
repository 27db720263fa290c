package dev.warden.gate;

import dev.warden.config.LilbeePaths;
import dev.warden.gate.GateAction.Word;
import dev.warden.gate.GateDecision.LilbeeState;
import dev.warden.gate.GateDecision.Step;
import dev.warden.keeper.KeeperPhase;
import dev.warden.lock.LockProbe;
import dev.warden.time.Moment;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.Function;

/**
 * An immutable picture of the election and of lilbee's server lock, published by the gate keeper
 * after every round, so the probes answer from memory without touching the volume.
 *
 * @param paths the paths watched (null before gate mode starts)
 * @param started whether this pod's lilbee may run: its supervisor has a permit
 * @param serving whether this pod serves: elected, and its lilbee holds the server.lock at the path and may run
 * @param note the last decision's reason, for the probe and the log
 * @param lease in lease mode, the election's state
 * @param warm the pid of the process lilbee's supervisor has prepared for the next permit (lilbee's modules loaded,
 *     holding nothing), as the supervisor says: shown, never trusted
 * @param settled whether an election now would let this pod's lilbee start at once: it has watched the gate file at
 *     the path for the settle (or elects by a Lease); a standby that has not would wait out the rest first
 */
public record GateSnapshot(KeeperPhase phase, LilbeePaths paths, GateState gate, ServerLockState server, boolean started,
        boolean serving, Optional<String> note, Optional<LeaseView> lease, OptionalLong warm, boolean settled) {

    public static GateSnapshot notStarted() {
        return new GateSnapshot(KeeperPhase.NOT_STARTED, null, new GateState.Waiting("not started"), new ServerLockState.NotInPod(),
                false, false, Optional.empty(), Optional.empty(), OptionalLong.empty(), false);
    }

    /**
     * The picture after a round: {@code step} is the round's decision and {@code seen} what it saw (both empty before the
     * first round), {@code instant} turns the gate's monotonic moments into the wall clock's for the status.
     */
    public static GateSnapshot of(KeeperPhase phase, LilbeePaths paths, GatePhase gatePhase, Optional<Step> step, Optional<Observation> seen,
            OptionalLong gateHolder, Function<Moment, Instant> instant, Optional<LeaseView> lease, OptionalLong warm) {
        if (step.isEmpty() || seen.isEmpty()) {
            return new GateSnapshot(phase, paths, new GateState.Waiting("not tried yet"), new ServerLockState.NotInPod(),
                    false, false, Optional.empty(), lease, warm, false);
        }
        GateState gate = switch (gatePhase) {
            case GatePhase.Elected elected -> new GateState.Elected(instant.apply(elected.since()));
            case GatePhase.Standby standby when seen.get().gate() instanceof Observation.Gate.Unlockable unlockable
                    && lease.isEmpty() -> new GateState.Failed(instant.apply(standby.since()), unlockable.why());
            case GatePhase.Standby standby when seen.get().gate() instanceof Observation.Gate.Unproven unproven
                    && unproven.shared() -> new GateState.Failed(instant.apply(standby.since()), unproven.why());
            case GatePhase.Standby standby -> new GateState.Standby(instant.apply(standby.since()), gateHolder);
        };
        Word word = step.get().word();
        boolean running = phase == KeeperPhase.RUNNING;
        return new GateSnapshot(phase, paths, gate, server(step.get(), seen.get().server()),
                running && (word instanceof Word.Start || word instanceof Word.Go), running && step.get().serving(),
                Optional.of(step.get().reason()), lease, warm, step.get().settled());
    }

    private static ServerLockState server(Step step, Observation.Server server) {
        GateDecision.Lilbee lilbee = step.lilbee();
        if (lilbee.state() == LilbeeState.SERVING || lilbee.state() == LilbeeState.ON_REPLACED_FILE) {
            return new ServerLockState.InPod(lilbee.pid(), lilbee.state() == LilbeeState.ON_REPLACED_FILE);
        }
        if (server.failure().isPresent()) {
            return new ServerLockState.Failed(server.failure().get());
        }
        return server.probe().<ServerLockState>map(probe -> probe == LockProbe.HELD ? new ServerLockState.HeldOutside()
                : new ServerLockState.Free()).orElse(new ServerLockState.NotInPod());
    }

    public Optional<Path> gateLock() {
        return Optional.ofNullable(paths).map(LilbeePaths::gateLock);
    }

    public Optional<Path> serverLock() {
        return Optional.ofNullable(paths).map(LilbeePaths::serverLock);
    }

    /**
     * Lease mode: the Lease's name, this warden's identity, whether it holds the Lease, who does and when they last
     * renewed it, as last seen.
     */
    public record LeaseView(String name, String identity, boolean leading, Optional<String> holder,
            Optional<Instant> renewed) {
    }
}
