package dev.warden.gate;

import static org.junit.jupiter.api.Assertions.fail;

import dev.warden.gate.GateDecision.LilbeeState;
import dev.warden.gate.pod.LilbeeSwitch;
import dev.warden.simulation.Sim;
import dev.warden.time.Moment;
import java.util.EnumSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * The simulation finds what each fix keeps out, with that fix undone, one at a time: proof that it looks where the
 * attacks were. Each mutation runs seed after seed until the simulation reports what the fix prevents (two lilbees
 * serving, or no pod serving steadily, or a pod that can no longer serve, after the faults), within
 * {@code warden.sim.mutation-steps} (40,000,000) steps; the violation found is printed with its seed and the steps it
 * took (docs/development.md lists them). A fix that matters in one kind of run alone is looked for there
 * ({@link Sim.Focus}). A search of one to two minutes on two cores: in the soak suite ({@code -Psoak}), which CI
 * runs, not in the default one.
 */
class GateMutationSoak {

    static final long BUDGET = Long.getLong("warden.sim.mutation-steps", 40_000_000);

    /** issue 21, first: a lock of any kind on server.lock, taken by any process of a standby pod, counted as its lilbee. */
    @Test
    void anyLockTakenForLilbee() {
        finds(EnumSet.of(Sim.Mutation.ANY_LOCK_PROVES_LILBEE), GateDecision::new, "two lilbees");
    }

    /** issue 21, second: a reset, then a restart of the serving warden; undone: the settle on a gate file new to a warden. */
    @Test
    void noSettleOnAReplacedGateFile() {
        finds(Sim.none(), timings -> new GateDecision(timings) {
            @Override
            Optional<Moment> settleAtElection(GatePhase.Watch watch, Observation seen, Lilbee lilbee) {
                return Optional.empty();
            }
        }, "two lilbees");
    }

    /** issue 21, third: a Lease leader's lilbee outliving its lead; undone: no permit ends after the lead. */
    @Test
    void permitsThatOutlastTheLead() {
        finds(Sim.none(), timings -> new GateDecision(timings) {
            @Override
            Moment permitEnd(Observation seen, Moment now) {
                return now.plus(timings.permit());
            }
        }, "two lilbees", Sim.Focus.LEASE);
    }

    /** server.lock renamed while warden is briefly down; undone: the gate lock kept for lilbee while it lives. */
    @Test
    void aSupervisorThatDoesNotKeepTheGateLock() {
        finds(EnumSet.of(Sim.Mutation.SUPERVISOR_WITHOUT_THE_GATE_LOCK), GateDecision::new, "two lilbees");
    }

    /** A decoy on a deleted server.lock in the standby pod taken for its lilbee on a replaced file, skipping the settle. */
    @Test
    void aDecoyOnAReplacedFileTakenForLilbee() {
        finds(EnumSet.of(Sim.Mutation.DECOY_ON_A_REPLACED_FILE_PROVES_LILBEE), timings -> new GateDecision(timings) {
            @Override
            Optional<Moment> settleAtElection(GatePhase.Watch watch, Observation seen, Lilbee lilbee) {
                return seen.supervisor().lilbee().isPresent() ? Optional.empty() : super.settleAtElection(watch, seen, lilbee);
            }
        }, "two lilbees");
    }

    /** A squatter on warden's port, believed while warden is down; undone: the switch socket. */
    @Test
    void aSupervisorThatBelievesThePort() {
        finds(EnumSet.of(Sim.Mutation.SUPERVISOR_BELIEVES_THE_PORT), GateDecision::new, "two lilbees");
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
        }, "two lilbees");
    }

    /**
     * The gate unlocked for a stepped-down lilbee once its lock on server.lock is gone, though it still has the file
     * open: a neighbour that took its descriptor and unlocked it (pidfd_getfd) has a standby elected while that lilbee
     * still serves. Undone: unlocked only once lilbee has closed server.lock.
     */
    @Test
    void aGateUnlockedForALilbeeWhoseLockWasTakenFromUnderIt() {
        finds(Sim.none(), timings -> new GateDecision(timings) {
            @Override
            LeavingState leavingNow(GatePhase.Leaving leaving, Observation seen) {
                Optional<Observation.Lilbee> running = seen.supervisor().lilbee()
                        .filter(l -> l.pid() == leaving.lilbee().pid() && l.startTicks() == leaving.lilbee().startTicks());
                if (running.isEmpty()) {
                    return LeavingState.GONE;
                }
                boolean locked = running.get().holds().contains(leaving.lilbee().file());
                return !locked && seen.supervisor().gate().equals(Optional.of(leaving.gate())) ? LeavingState.DONE_SERVING
                        : LeavingState.SERVING;
            }
        }, "two lilbees");
    }

    /**
     * Attack 1 of issue 48: a neighbour connecting beside the supervisor was heard, the newest speaking for lilbee's
     * container and the supervisor let go for it. Undone: one supervisor per switch.
     */
    @Test
    void theNewestConnectionSpeaksForLilbeesContainer() {
        finds(Sim.none(), GateDecision::new, (posix, procs, path, uid) -> new LilbeeSwitch(posix, procs, path, uid) {
            @Override
            protected boolean replacesTheSupervisor() {
                return true;
            }
        }, null, Sim.Focus.DRAWN);
    }

    /** Attack 1 of issue 48, the other half: a socket at the switch path believed for being there. Undone: who listens. */
    @Test
    void aSupervisorThatBelievesWhateverListensAtThePath() {
        finds(EnumSet.of(Sim.Mutation.SUPERVISOR_BELIEVES_ANY_PEER), GateDecision::new, "two lilbees");
    }

    /** lilbee, whose descriptors a neighbour can take, given one of the gate lock. Undone: the supervisor's alone. */
    @Test
    void lilbeeHoldingTheGateLock() {
        finds(EnumSet.of(Sim.Mutation.LILBEE_HOLDS_THE_GATE), GateDecision::new, "two lilbees");
    }

    /** A dumpable supervisor, whose gate lock a neighbour can take and unlock. Undone: it makes itself undumpable. */
    @Test
    void aDumpableSupervisor() {
        finds(EnumSet.of(Sim.Mutation.SUPERVISOR_DUMPABLE), GateDecision::new, "two lilbees");
    }

    /** Attack 3 of issue 48: the health port taken on one family, the squatter answering the kubelet. Undone: it exits. */
    @Test
    void aSupervisorThatFallsBackOnATakenPort() {
        finds(EnumSet.of(Sim.Mutation.SUPERVISOR_FALLS_BACK_ON_A_TAKEN_PORT), GateDecision::new, "two lilbees");
    }

    /** A hello read late distrusted warden for good, and its pod could never serve again. Undone: asked again. */
    @Test
    void aSupervisorThatDistrustsForGood() {
        finds(EnumSet.of(Sim.Mutation.SUPERVISOR_DISTRUSTS_FOR_GOOD), GateDecision::new, "pods that cannot serve");
    }

    /**
     * A lease-mode warden killed and restarted, then SIGTERMed before its supervisor reports: it let the Lease go while
     * a permit its previous run gave still kept a lilbee. Undone: a fresh warden counts one permit from its start.
     */
    @Test
    void aRestartedWardenThatForgetsItsPreviousRunsPermits() {
        finds(EnumSet.of(Sim.Mutation.PREVIOUS_RUNS_PERMITS_FORGOTTEN), GateDecision::new, "two lilbees");
    }

    /**
     * A stop answered to the next warden its supervisor connected to (a restarted one), taken for an answer to that
     * warden's own stop of the same number: its Lease went while its lilbee still ran. Undone: a stop is answered, and
     * its answer counted, on the connection it was said on.
     */
    @Test
    void aStopAnsweredAcrossConnections() {
        finds(EnumSet.of(Sim.Mutation.STOP_ANSWERED_ACROSS_CONNECTIONS), GateDecision::new,
                (posix, procs, path, uid) -> new LilbeeSwitch(posix, procs, path, uid) {
                    @Override
                    protected boolean answers(long answered, long saidHere) {
                        return true;
                    }
                }, "two lilbees", Sim.Focus.LEASE_HANDOVERS_KILLED);
    }

    /**
     * issue 50, a volume whose locks stay on each node: a gate lock's holder taken for gone after four silent beats,
     * while its lilbee outlives its last permit by the permit and the overrun. Undone: the window covers them.
     */
    @Test
    void aHeartbeatWindowShorterThanALilbeeOutlivesItsWarden() {
        finds(EnumSet.of(Sim.Mutation.HEARTBEAT_WINDOW_WITHOUT_THE_PERMIT), GateDecision::new, "two lilbees", Sim.Focus.NODE_LOCAL_FILES);
    }

    /**
     * issue 50: a gate lock taken counted as reaching every pod, while its heartbeat names a holder on another node (a
     * restarted warden given its lock back by its supervisor, while a pod of the other node took over). Undone: a take
     * proves only that the holders of its own lock domain let go.
     */
    @Test
    void aTakeCountedAsReachingAnotherNode() {
        finds(EnumSet.of(Sim.Mutation.ANY_TAKE_PROVES_THE_LOCK_REACHES), GateDecision::new, "two lilbees", Sim.Focus.NODE_LOCAL_FILES);
    }

    /**
     * issue 50: a standby sharing the gate lock with a pod of another node taking a record saying released (forged by a
     * process of the pod) for that pod's end. Undone: only silence for the window ends a wait.
     */
    @Test
    void aReleasedHeartbeatTakenForTheEndOfItsHolder() {
        finds(EnumSet.of(Sim.Mutation.A_STANDBY_TRUSTS_A_RELEASED_RECORD), GateDecision::new, "two lilbees", Sim.Focus.NODE_LOCAL_FILES);
    }

    /**
     * issue 50: the first of two gate lock holders on a volume whose locks stay on each node, paused past the window while
     * the other took over, serving again beside it. Undone: a holder silent for the window stands by.
     */
    @Test
    void aFirstHolderServingOnAfterAPause() {
        finds(EnumSet.of(Sim.Mutation.THE_FIRST_HOLDER_KEEPS_SERVING_AFTER_A_PAUSE), GateDecision::new, "two lilbees", Sim.Focus.NODE_LOCAL_FILES);
    }

    /**
     * issue 50: what the margins are for. A node frozen longer than its election's margin (here the heartbeat's window
     * less the grace: a frozen pod's lilbee outlives its last beat that long after it thaws) and a standby of another
     * node takes over meanwhile. No fix undone: the margin is the design's, and this shows it is where the docs say.
     */
    @Test
    void aNodeFrozenPastTheMargin() {
        finds(EnumSet.of(Sim.Mutation.NODES_FROZEN_PAST_THE_MARGIN), GateDecision::new, "two lilbees", Sim.Focus.NODE_LOCAL_FILES);
    }

    /**
     * issue 50, recovery: an elected pod that cannot serve (its lilbee's container crash-looping, its supervisor gone)
     * never hands the gate over, while a standby could serve. Undone: the handover after handoverAfter.
     */
    @Test
    void anElectedPodThatNeverHandsOver() {
        finds(Sim.none(), timings -> new GateDecision(timings) {
            @Override
            boolean handsOver(java.time.Duration unserved) {
                return false;
            }
        }, "no pod serves", Sim.Focus.CRASH_LOOPS);
    }

    /**
     * issue 50: clocks that run apart. A node whose clock runs slow keeps its lilbee past its permit by the simulation's
     * time, while one whose clock runs fast ends its wait early: each clock off by up to 40 %, every margin is gone
     * (docs/modes.md: without a pause, the timings tolerate about 10 %).
     */
    @Test
    void clocksSkewedPastTheMargin() {
        finds(EnumSet.of(Sim.Mutation.CLOCKS_SKEWED_PAST_THE_MARGIN), GateDecision::new, "two lilbees", Sim.Focus.LEASE);
    }

    /** A gate file replaced under the elected warden (a reset, a rename) taken as still elected. Undone: it stands by. */
    @Test
    void aReplacedGateFileStillElects() {
        finds(Sim.none(), timings -> new GateDecision(timings) {
            @Override
            Optional<NotElected> whyNotElected(Observation seen) {
                return super.whyNotElected(seen).filter(why -> why.cause() != GateOutcome.Cause.GATE_REPLACED);
            }
        }, "two lilbees");
    }

    /**
     * This pod's lilbee, proven on a server.lock no longer at the path, left to serve on: the data dir is served by no
     * lilbee on its file, for good. Undone: stopped, to start again on the file at the path.
     */
    @Test
    void aLilbeeOnAReplacedServerLockGoesOn() {
        finds(Sim.none(), goesOn(LilbeeState.ON_REPLACED_FILE), "no pod serves");
    }

    /**
     * This pod's lilbee, run longer than a start takes on no lock at the path, left to run, and never serving. Undone:
     * stopped, to start again on the file at the path.
     */
    @Test
    void anUnprovenLilbeeGoesOn() {
        finds(Sim.none(), goesOn(LilbeeState.UNPROVEN), "no pod serves");
    }

    /**
     * This pod's lilbee, run under a gate file since replaced, not this warden's, left to run, and never serving. Undone:
     * stopped, to start again under the gate this warden holds.
     */
    @Test
    void aLilbeeUnderAnotherGateGoesOn() {
        finds(Sim.none(), goesOn(LilbeeState.UNDER_ANOTHER_GATE), "no pod serves");
    }

    /** The decision with one of its stops undone: a lilbee of this pod in {@code state} told to go on. */
    private static Function<GateTimings, GateDecision> goesOn(LilbeeState state) {
        return timings -> new GateDecision(timings) {
            @Override
            Said word(Observation seen, Lilbee lilbee, Optional<Moment> settleUntil, Moment electedAt, Moment now) {
                return lilbee.state() == state ? new Said(new GateAction.Word.Go(permitEnd(seen, now)), GateOutcome.STARTING)
                        : super.word(seen, lilbee, settleUntil, electedAt, now);
            }
        };
    }

    private static void finds(Set<Sim.Mutation> mutations, Function<GateTimings, GateDecision> decisions, String what) {
        finds(mutations, decisions, LilbeeSwitch::open, what, Sim.Focus.DRAWN);
    }

    private static void finds(Set<Sim.Mutation> mutations, Function<GateTimings, GateDecision> decisions, String what,
            Sim.Focus focus) {
        finds(mutations, decisions, LilbeeSwitch::open, what, focus);
    }

    /**
     * Runs seeds until a violation starting with {@code what} (any, when null) is found, or fails at the budget. The
     * seeds run on every core, each taken in order, and the answer is the sequential search's: the lowest seed that
     * finds it, after the steps of every seed below it, so that the steps printed do not depend on the cores.
     */
    private static void finds(Set<Sim.Mutation> mutations, Function<GateTimings, GateDecision> decisions,
            Sim.Switches switches, String what, Sim.Focus focus) {
        String test = StackWalker.getInstance().walk(frames -> frames.map(StackWalker.StackFrame::getMethodName)
                .filter(name -> !name.equals("finds")).findFirst().orElseThrow());
        Map<Long, Sim.Outcome> outcomes = Sim.runSeeds(1, BUDGET,
                seed -> Sim.run(seed, Long.MAX_VALUE, 60, mutations, decisions, switches, focus), outcome -> finds(outcome, what));
        long steps = 0;
        for (long seed = 1; steps < BUDGET && outcomes.containsKey(seed); seed++) {
            Sim.Outcome outcome = outcomes.get(seed);
            steps += outcome.steps();
            if (finds(outcome, what)) {
                System.out.println("MUTATION " + test + " found after " + steps + " steps: " + outcome.violation().get().report());
                return;
            }
        }
        fail("the simulation did not find what " + test + " lets in within " + steps + " steps");
    }

    private static boolean finds(Sim.Outcome outcome, String what) {
        return outcome.violation().isPresent() && (what == null || outcome.violation().get().what().startsWith(what));
    }
}
