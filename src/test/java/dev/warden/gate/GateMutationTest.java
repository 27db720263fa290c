package dev.warden.gate;

import static org.junit.jupiter.api.Assertions.fail;

import dev.warden.simulation.Sim;
import java.util.EnumSet;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * The simulation finds each split brain found before, with its fix undone, one at a time: proof that it looks where
 * they were. Each mutation runs seed after seed until the invariant breaks, within {@code warden.sim.mutation-steps}
 * (40,000,000) steps; the violation found is printed with its seed (each was found within 24,000,000 when this was
 * written: the outlasting permit the rarest, since a new lilbee container's first lilbee waits for its liveness probe).
 */
class GateMutationTest {

    static final long BUDGET = Long.getLong("warden.sim.mutation-steps", 40_000_000);

    /** issue 21, first: a lock of any kind on server.lock, taken by any process of a standby pod, counted as its lilbee. */
    @Test
    void anyLockTakenForLilbee() {
        finds(EnumSet.of(Sim.Mutation.ANY_LOCK_PROVES_LILBEE), GateDecision::new);
    }

    /** issue 21, second: a reset, then a restart of the serving warden; undone: the settle on a gate file new to a warden. */
    @Test
    void noSettleOnAReplacedGateFile() {
        finds(Sim.none(), timings -> new GateDecision(timings) {
            @Override
            Optional<Moment> settleAtElection(GatePhase.Watch watch, Observation seen, Lilbee lilbee) {
                return Optional.empty();
            }
        });
    }

    /** issue 21, third: a Lease leader's lilbee outliving its lead; undone: no permit ends after the lead. */
    @Test
    void permitsThatOutlastTheLead() {
        finds(Sim.none(), timings -> new GateDecision(timings) {
            @Override
            Moment permitEnd(Observation seen, Moment now) {
                return now.plus(timings.permit());
            }
        });
    }

    /** This first: server.lock renamed while warden is briefly down; undone: lilbee holding warden's gate lock. */
    @Test
    void lilbeeWithoutTheGateLock() {
        finds(EnumSet.of(Sim.Mutation.LILBEE_WITHOUT_THE_GATE_LOCK), GateDecision::new);
    }

    /**
     * This second: a decoy on a deleted server.lock in the standby pod taken for its lilbee on a replaced file,
     * and its pod started at once for it, skipping the settle.
     */
    @Test
    void aDecoyOnAReplacedFileTakenForLilbee() {
        finds(EnumSet.of(Sim.Mutation.DECOY_ON_A_REPLACED_FILE_PROVES_LILBEE), timings -> new GateDecision(timings) {
            @Override
            Optional<Moment> settleAtElection(GatePhase.Watch watch, Observation seen, Lilbee lilbee) {
                return seen.supervisor().lilbee().isPresent() ? Optional.empty() : super.settleAtElection(watch, seen, lilbee);
            }
        });
    }

    /** This third: a squatter on warden's port, believed while warden is down; undone: the switch socket. */
    @Test
    void aSupervisorThatBelievesThePort() {
        finds(EnumSet.of(Sim.Mutation.SUPERVISOR_BELIEVES_THE_PORT), GateDecision::new);
    }

    /**
     * issue 37: a switchover in lease mode; undone: the Lease kept until the supervisor says its lilbee is gone (or no
     * permit given can be used), so another node's lilbee could start beside the one still stopping.
     */
    @Test
    void aLeaseLetGoAtOnceOnStepDown() {
        finds(Sim.none(), timings -> new GateDecision(timings) {
            @Override
            boolean mayLetGoAtStepDown(Observation seen, Moment permitsEnd) {
                return true;
            }
        });
    }

    /**
     * The gate unlocked at a step-down for the serving lilbee at once, not once it has let server.lock go: a standby is
     * elected while that lilbee still serves, and starts its own on a server.lock replaced meanwhile (a reset).
     */
    @Test
    void aGateUnlockedBeforeTheSteppedDownLilbeeLetServerLockGo() {
        finds(Sim.none(), timings -> new GateDecision(timings) {
            @Override
            LeavingState leavingNow(GatePhase.Leaving leaving, Observation seen) {
                LeavingState state = super.leavingNow(leaving, seen);
                return state == LeavingState.SERVING ? LeavingState.DONE_SERVING : state;
            }
        });
    }

    private static void finds(Set<Sim.Mutation> mutations, Function<GateTimings, GateDecision> decisions) {
        String what = StackWalker.getInstance().walk(frames -> frames.skip(1).findFirst().orElseThrow().getMethodName());
        long steps = 0;
        for (long seed = 1; steps < BUDGET; seed++) {
            Sim.Outcome outcome = Sim.run(seed, Long.MAX_VALUE, 60, mutations, decisions);
            steps += outcome.steps();
            if (outcome.violation().isPresent() && outcome.violation().get().what().startsWith("two lilbees")) {
                System.out.println("MUTATION " + what + " found after " + steps + " steps: " + outcome.violation().get().report());
                return;
            }
        }
        fail("the simulation did not find the split brain within " + steps + " steps");
    }
}
