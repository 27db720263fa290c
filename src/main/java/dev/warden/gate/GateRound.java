package dev.warden.gate;

import dev.warden.gate.GateDecision.Step;
import dev.warden.lock.FileId;
import dev.warden.time.Moment;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;

/**
 * One round of a warden's gate, in any {@link GateWorld}: hear the supervisor, observe once, decide, act. The gate
 * keeper runs it on the machine, the simulation in its model of the pod, so both run this very code.
 */
public final class GateRound {

    private final GateDecision decision;

    public GateRound(GateDecision decision) {
        this.decision = decision;
    }

    public GateDecision decision() {
        return decision;
    }

    /** One round from {@code phase}: what was seen, what was decided (the next phase among it), all done. */
    public Result turn(GateWorld world, GatePhase phase) {
        world.hearSupervisor();
        Observation seen = observe(world, phase);
        Step step = decision.step(phase, seen);
        act(world, step);
        return new Result(seen, step);
    }

    public record Result(Observation seen, Step step) {
    }

    /**
     * The round's one look. The supervisor's lilbee is asked about the server.lock at the path and about the file it was
     * proven on before (which a reset or a rename may have taken from the path); the gate lock it runs under is the
     * supervisor's to hold, and its word; server.lock is taken and let go only where it decides something: this warden
     * holds the gate and its lilbee does not hold the file.
     */
    static Observation observe(GateWorld world, GatePhase phase) {
        Moment now = world.now();
        Observation.Gate gate = world.gate();
        Optional<Observation.Lease> lease = world.lease();
        Optional<FileId> serverAtPath = world.serverAtPath();
        Optional<FileId> gateAtPath = world.gateAtPath();
        Optional<Observation.Lilbee> lilbee = world.reportedLilbee().map(reported -> {
            Set<FileId> wanted = new HashSet<>();
            serverAtPath.ifPresent(wanted::add);
            if (phase instanceof GatePhase.Standby standby && standby.leaving().isPresent()) {
                wanted.add(standby.leaving().get().lilbee().file());
            }
            if (phase instanceof GatePhase.Elected elected) {
                elected.proven().map(GatePhase.Proven::file).ifPresent(wanted::add);
            }
            GateWorld.Holding holding = world.holds(reported, wanted);
            return new Observation.Lilbee(reported.pid(), reported.startTicks(), reported.launched(), holding.locked(),
                    holding.open());
        });
        boolean holdsGate = gate instanceof Observation.Gate.Held held && held.atPath()
                || gate instanceof Observation.Gate.Unlockable && lease.isPresent();
        boolean lilbeeOnIt = lilbee.isPresent() && serverAtPath.isPresent() && lilbee.get().holds().contains(serverAtPath.get());
        Observation.Server server = holdsGate && !lilbeeOnIt ? world.probeServer(serverAtPath)
                : Observation.Server.unlooked(serverAtPath);
        return new Observation(now, gate, lease, gateAtPath, server, new Observation.Supervisor(world.supervisorConnected(),
                lilbee, world.supervisorPermit(), world.supervisorStopDone(), world.supervisorGate()), world.stepDownAsked());
    }

    static void act(GateWorld world, Step step) {
        for (GateAction action : step.actions()) {
            switch (action) {
                case GateAction.Contend contend -> world.contend();
                case GateAction.ReleaseGate release -> world.releaseGate();
                case GateAction.RetireGate retire -> world.retireGate();
                case GateAction.UnlockGate unlock -> world.unlockGate();
                case GateAction.StepAside aside -> world.stepAside();
                case GateAction.Say say -> world.say(say.word());
            }
        }
    }
}
