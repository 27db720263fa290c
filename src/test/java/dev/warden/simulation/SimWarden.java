package dev.warden.simulation;

import dev.warden.gate.GateAction.Word;
import dev.warden.gate.GateDecision;
import dev.warden.gate.pod.GateLock;
import dev.warden.gate.GatePhase;
import dev.warden.gate.GateRound;
import dev.warden.gate.GateTimings;
import dev.warden.gate.GateWorld;
import dev.warden.gate.pod.LilbeeProof;
import dev.warden.gate.pod.LilbeeSwitch;
import dev.warden.gate.Observation;
import dev.warden.gate.pod.PodGate;
import dev.warden.lock.FileId;
import dev.warden.lock.FileLocker;
import dev.warden.lock.Heartbeat;
import dev.warden.lock.LockReach;
import dev.warden.lock.ReachProof;
import dev.warden.time.Moment;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * A warden process in the simulation: the production gate ({@link PodGate}: the real {@link LilbeeSwitch},
 * {@link GateLock} over the real {@link FileLocker}, {@link LilbeeProof}, {@link GateRound} and {@link GateDecision}),
 * every 50 ms and at once when a wait for the gate lock ends, as the keeper's loop runs it, over this process's share
 * of the simulated kernel ({@link SimPosix}, {@link SimProcFs}). Undumpable, as warden makes itself: no process of its
 * UID looks into it or takes its descriptors. Its Lease, in lease mode, is the production election, driven by
 * {@link SimLease}.
 */
final class SimWarden {

    private static final long ROUND = 50 * Sim.MS;
    static final Path SOCKET = Path.of(Kernel.SWITCH_DIR, "switch.sock");
    /** As the keeper's: how long a stopping warden waits for its lilbee to be gone before leaving the Lease to expire. */
    private static final long LEASE_RELEASE_WAIT = 4 * Sim.SECOND;

    final Sim sim;
    /** warden's default beat. */
    static final Duration HEARTBEAT = Duration.ofMillis(250);
    final SimPod pod;
    final Kernel.Proc proc;
    private final GateRound rounds;
    private final Optional<SimLease> lease;
    private PodGate world;
    /** What the rounds run in: the production world, or it with a fix of the proof undone (a mutation). */
    private GateWorld rounding;
    private GatePhase phase;
    private GateDecision.Step last;
    private boolean stopping;
    private Moment stepDownAsked;
    /** The round scheduled last: a wait for the gate lock that ends starts one at once, and the one due is let go. */
    private long roundNumber;

    SimWarden(Sim sim, SimPod pod) {
        this.sim = sim;
        this.pod = pod;
        this.proc = sim.kernel.spawn(pod.node, pod.name + "/warden", pod.name, "warden", null, false);
        this.rounds = new GateRound(sim.config.decisions().apply(sim.config.timings()));
        this.lease = sim.api.map(api -> new SimLease(sim, this, api, pod.name));
    }

    /** Starts: the switch listens after the process's start (a JVM's: up to a second and a half), then rounds begin. */
    void start() {
        sim.at(sim.between(50 * Sim.MS, 1500 * Sim.MS), proc, "warden up", () -> {
            SimPosix posix = new SimPosix(sim.kernel, proc);
            SimProcFs procs = new SimProcFs(sim.kernel, proc, sim.mutated(Sim.Mutation.GATE_LOCK_ASSUMED));
            FileLocker locker = new FileLocker(posix);
            LilbeeSwitch lilbeeSwitch;
            try {
                lilbeeSwitch = sim.config.switches().open(posix, procs, SOCKET, Kernel.UID);
            } catch (IOException e) {
                sim.fail("warden could not listen on its switch socket: " + e.getMessage());
                return;
            }
            world = new PodGate(posix, locker, Sim.PATHS, lilbeeSwitch, new GateLock(locker, procs, Sim.PATHS.gateLock(),
                    Duration.ofSeconds(1), heartbeat(posix)), new LilbeeProof(procs, () -> sim.moment(pod.node)), () -> sim.moment(pod.node), () -> lease.map(l -> l.election).orElse(null),
                    stepDowns(), remembered());
            rounding = sim.mutated(Sim.Mutation.ANY_LOCK_PROVES_LILBEE) || sim.mutated(Sim.Mutation.DECOY_ON_A_REPLACED_FILE_PROVES_LILBEE)
                    ? new DecoyTakenForLilbee(world) : world;
            phase = GatePhase.begin(world.gateAtPath(), sim.moment(pod.node), remembered().permit());
            sim.log(proc, "listening on its switch socket");
            lease.ifPresent(SimLease::start);
            round(++roundNumber);
        });
    }

    /**
     * The gate lock's heartbeat where the file lock elects, as warden writes it, on the simulated volume: each node's
     * kernel its own lock domain.
     */
    private Optional<LockReach> heartbeat(SimPosix posix) {
        if (lease.isPresent()) {
            return Optional.empty();
        }
        String holder = pod.name + ":" + proc.pid;
        Duration outlives = sim.mutated(Sim.Mutation.HEARTBEAT_WINDOW_WITHOUT_THE_PERMIT) ? Duration.ZERO
                : remembered().permit().plus(remembered().overrun());
        return Optional.of(new LockReach(posix, Sim.PATHS.gateLock(), "node-" + pod.node,
                domain -> new MutatedProof(holder, pod.name, domain, outlives), () -> sim.moment(pod.node)));
    }

    /** The heartbeat's decision, with the rule a mutation undoes, if any. */
    private final class MutatedProof extends ReachProof {
        private final String holder;

        MutatedProof(String holder, String pod, String domain, Duration outlives) {
            super(holder, pod, domain, HEARTBEAT, outlives);
            this.holder = holder;
        }

        @Override
        public Step taken(Optional<Heartbeat> seen, Moment now) {
            // Undone: a record of another domain's holder is watched before the lock counts as reaching.
            return sim.mutated(Sim.Mutation.ANY_TAKE_PROVES_THE_LOCK_REACHES)
                    ? super.taken(seen.filter(h -> h.holder().equals(holder)), now) : super.taken(seen, now);
        }

        @Override
        public Step step(Reach reach, Optional<Heartbeat> seen, Moment now) {
            boolean let = seen.isEmpty() || seen.get().released();
            if (sim.mutated(Sim.Mutation.A_STANDBY_TRUSTS_A_RELEASED_RECORD) && !(reach instanceof Reach.Proven) && let) {
                return super.taken(Optional.empty(), now);
            }
            if (sim.mutated(Sim.Mutation.THE_FIRST_HOLDER_KEEPS_SERVING_AFTER_A_PAUSE) && reach instanceof Reach.Proven proven
                    && !let && !seen.get().holder().equals(holder) && seen.get().laterThan(proven.mine())) {
                Heartbeat next = proven.mine().next();
                return new Step(new Reach.Proven(next, now, Optional.of(now)), Optional.of(next));
            }
            return super.step(reach, seen, now);
        }
    }

    /** The timings as this warden counts its previous run's permits: as given, or (a mutation) with none of them. */
    private GateTimings remembered() {
        GateTimings timings = sim.config.timings();
        return sim.mutated(Sim.Mutation.PREVIOUS_RUNS_PERMITS_FORGOTTEN) ? new GateTimings(timings.settle(), Duration.ZERO,
                timings.grace(), timings.stallBound(), timings.handoverAfter(), timings.lease()) : timings;
    }

    private PodGate.StepDowns stepDowns() {
        return new PodGate.StepDowns() {
            @Override
            public Optional<Moment> asked() {
                return Optional.ofNullable(stepDownAsked);
            }

            @Override
            public void ask(Moment at) {
                stepDownAsked = at;
            }

            @Override
            public Duration every() {
                return sim.mutated(Sim.Mutation.STEP_DOWNS_UNLIMITED) ? Duration.ZERO : sim.config.timings().handoverAfter();
            }
        };
    }

    boolean listening() {
        return world != null && !stopping;
    }

    /** As the keeper's loop, whose last step is the stop ({@link #terminate}): no round after it began. */
    private void round(long number) {
        if (stopping || number != roundNumber) {
            return;
        }
        GateRound.Result result = rounds.turn(rounding, phase);
        phase = result.step().phase();
        if (result.seen().gate() instanceof Observation.Gate.Lost) {
            sim.log(proc, "its gate lock vanished under it");
        }
        if (result.step().isNewsAfter(last)) {
            sim.log(proc, result.step().reason());
        }
        last = result.step();
        long next = ++roundNumber;
        sim.at(ROUND, proc, "round", () -> round(next));
        CompletableFuture<?> waiting = world.gateLock().pending();
        if (waiting != null) {
            // The keeper's loop wakes the moment the kernel grants the lock it waits for.
            waiting.whenComplete((won, failed) -> sim.at(0, proc, "gate won", () -> {
                if (roundNumber == next) {
                    round(++roundNumber);
                }
            }));
        }
    }

    /** Its pod serves, as it says: its last round's decision. */
    boolean serving() {
        return last != null && last.serving() && !proc.stopped;
    }

    /**
     * SIGTERM: as the keeper's last step, the supervisor is told to stop lilbee and the gate lock let go; the Lease is
     * released once the supervisor says its stop is done or no permit given can still be used (else left to expire);
     * the process exits.
     */
    void terminate() {
        if (!proc.alive || stopping) {
            return;
        }
        sim.at(0, proc, "warden stops", () -> {
            if (world == null) {
                sim.die(proc, "exits (SIGTERM, before it listened)");
                return;
            }
            stopping = true;
            world.stop();
            awaitStopDone(sim.clock(pod.node) + LEASE_RELEASE_WAIT);
        });
    }

    private void awaitStopDone(long deadline) {
        LilbeeSwitch lilbeeSwitch = world.lilbeeSwitch();
        lilbeeSwitch.poll(sim.moment(pod.node));
        boolean done = world.supervisorStopDone() || rounds.decision().mayLetTheLeaseGo(phase, sim.moment(pod.node));
        if (lease.isPresent() && !done && sim.clock(pod.node) < deadline) {
            lilbeeSwitch.say(new Word.Stop("warden stops"), sim.moment(pod.node), java.util.OptionalInt.empty());
            sim.at(20 * Sim.MS, proc, "waiting for the stop", () -> awaitStopDone(deadline));
            return;
        }
        lease.ifPresent(l -> l.election.close(done));
        lilbeeSwitch.close();
        // As the keeper joins the Lease's thread: its release sent and answered, or two retry periods and a second.
        exitOnceTheLeaseIsDone(sim.clock(pod.node) + 2 * sim.config.timings().lease().map(l -> l.retryPeriod().toNanos()).orElse(0L)
                + Sim.SECOND);
    }

    private void exitOnceTheLeaseIsDone(long deadline) {
        if (lease.isPresent() && !lease.get().done() && sim.clock(pod.node) < deadline) {
            sim.at(20 * Sim.MS, proc, "waiting for the Lease's loop to end", () -> exitOnceTheLeaseIsDone(deadline));
            return;
        }
        sim.at(sim.between(10 * Sim.MS, 300 * Sim.MS), proc, "warden exits", () -> sim.die(proc, "exits (SIGTERM)"));
    }

    /** Asked to step down by an operator (its API or CLI): taken at the next round. */
    void askStepDown() {
        if (proc.alive) {
            stepDownAsked = sim.moment(pod.node);
        }
    }

    /**
     * The proof as it was before issue 21: a process of the pod other than its lilbee taken for it. With
     * ANY_LOCK_PROVES_LILBEE, any process holding the server.lock at the path; with DECOY_ON_A_REPLACED_FILE_PROVES_LILBEE,
     * one holding a lock on a file no longer at the path, its lock taken for one on the file at the path. Either passes
     * for a lilbee under this warden's gate, as every lilbee did before the gate lock.
     */
    private final class DecoyTakenForLilbee implements GateWorld {
        private final PodGate world;
        private Optional<Kernel.Proc> decoy = Optional.empty();

        DecoyTakenForLilbee(PodGate world) {
            this.world = world;
        }

        @Override
        public Optional<Reported> reportedLilbee() {
            Optional<FileId> atPath = world.serverAtPath();
            decoy = pod.hostile.decoys.stream().filter(p -> p.alive && !p.exclusiveFlocks().isEmpty()).filter(p -> {
                boolean onThePath = atPath.filter(p.exclusiveFlocks()::contains).isPresent();
                return sim.mutated(Sim.Mutation.ANY_LOCK_PROVES_LILBEE) && onThePath
                        || sim.mutated(Sim.Mutation.DECOY_ON_A_REPLACED_FILE_PROVES_LILBEE) && !onThePath;
            }).findFirst();
            return decoy.map(p -> new Reported(p.pid, p.startTicks, sim.moment(pod.node).minus(Duration.ofHours(1))))
                    .or(world::reportedLilbee);
        }

        @Override
        public GateWorld.Holding holds(Reported lilbee, Set<FileId> wanted) {
            if (decoy.filter(p -> p.pid == lilbee.pid()).isEmpty()) {
                return world.holds(lilbee, wanted);
            }
            Set<FileId> held = new HashSet<>();
            for (FileId file : decoy.get().exclusiveFlocks()) {
                if (wanted.contains(file)) {
                    held.add(file);
                } else if (sim.mutated(Sim.Mutation.DECOY_ON_A_REPLACED_FILE_PROVES_LILBEE)) {
                    world.serverAtPath().ifPresent(held::add);
                }
            }
            return new GateWorld.Holding(held, held);
        }

        @Override
        public Optional<FileId> supervisorGate() {
            if (decoy.isPresent() && world.gate() instanceof Observation.Gate.Held held) {
                return Optional.of(held.file());
            }
            return world.supervisorGate();
        }

        @Override
        public Moment now() {
            return world.now();
        }

        @Override
        public void hearSupervisor() {
            world.hearSupervisor();
        }

        @Override
        public Observation.Gate gate() {
            return world.gate();
        }

        @Override
        public Optional<Observation.Lease> lease() {
            return world.lease();
        }

        @Override
        public Optional<FileId> gateAtPath() {
            return world.gateAtPath();
        }

        @Override
        public Optional<FileId> serverAtPath() {
            return world.serverAtPath();
        }

        @Override
        public Observation.Server probeServer(Optional<FileId> atPath) {
            return world.probeServer(atPath);
        }

        @Override
        public boolean supervisorConnected() {
            return world.supervisorConnected();
        }

        @Override
        public Optional<Moment> supervisorPermit() {
            return world.supervisorPermit();
        }

        @Override
        public boolean supervisorStopDone() {
            return world.supervisorStopDone();
        }

        @Override
        public Optional<Moment> stepDownAsked() {
            return world.stepDownAsked();
        }

        @Override
        public void contend() {
            world.contend();
        }

        @Override
        public void releaseGate() {
            world.releaseGate();
        }

        @Override
        public void retireGate() {
            world.retireGate();
        }

        @Override
        public void unlockGate() {
            world.unlockGate();
        }

        @Override
        public void stepAside() {
            world.stepAside();
        }

        @Override
        public void say(Word word) {
            world.say(word);
        }
    }

    String describe() {
        return (proc.alive ? proc.stopped ? "stopped" : "up" : "dead") + ", " + (last == null ? "no round yet" : last.reason());
    }
}
