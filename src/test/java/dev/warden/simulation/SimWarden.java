package dev.warden.simulation;

import dev.warden.gate.GateAction.Word;
import dev.warden.gate.GateDecision;
import dev.warden.gate.GatePhase;
import dev.warden.gate.GateRound;
import dev.warden.gate.GateWorld;
import dev.warden.gate.Moment;
import dev.warden.gate.Observation;
import dev.warden.lock.FileId;
import dev.warden.lock.LockProbe;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;

/**
 * A warden process in the simulation: the real {@link GateRound} and {@link GateDecision}, every 50 ms, through a model
 * of its edges that does what the gate keeper's do on a machine: the gate lock taken on the file at the path or waited
 * for in the kernel (a win on a file no longer at the path is let go and the path tried again, as FileLocker does), its
 * descriptor passed with a permit to start, the switch socket's words and reports (a few milliseconds in flight), a
 * gate lock given back by the supervisor adopted, and the supervisor's lilbee proven by the locks its own descriptors
 * hold.
 */
final class SimWarden implements GateWorld {

    private static final long ROUND = 50 * Sim.MS;
    private static final long REPEAT = 500 * Sim.MS;

    final Sim sim;
    final SimPod pod;
    final Kernel.Proc proc;
    private final GateRound rounds;
    private final Optional<SimLease> lease;
    private GatePhase phase;
    private GateDecision.Step last;
    private boolean listening;
    private Kernel.Ofd gate;
    /** The gate lock's open file, retired at a step-down, kept to be unlocked for this pod's lilbee. */
    private Kernel.Ofd retired;
    private Kernel.Ofd waiting;
    /** The supervisor connected to this warden's switch socket, and what it last reported (delivered). */
    SimSupervisor supervisor;
    private Optional<Reported> reported = Optional.empty();
    private Optional<Moment> permitReported = Optional.empty();
    private final java.util.List<Kernel.Ofd> offers = new java.util.ArrayList<>();
    private String lastSaid = "";
    private long lastSaidAt;
    private boolean stopping;
    /** As the switch numbers them: each stop said after another word, and the last the connected supervisor answered. */
    private String lastKind = "";
    private long stopNumber;
    private long stopAnswered;
    private Optional<Moment> stepDownAsked = Optional.empty();
    /** The last supervisor connected said it exits, its lilbee gone; a newer one connecting takes that back. */
    boolean supervisorExited;

    SimWarden(Sim sim, SimPod pod) {
        this.sim = sim;
        this.pod = pod;
        this.proc = sim.kernel.spawn(pod.node, pod.name + "/warden");
        this.rounds = new dev.warden.gate.GateRound(sim.config.decisions().apply(sim.config.timings()));
        this.lease = sim.api.map(api -> new SimLease(sim, this, api, pod.name));
        proc.onDeath.add(() -> {
            if (supervisor != null) {
                supervisor.wardenGone(this);
            }
        });
    }

    /** Starts: the switch listens after the process's start (a JVM's: up to a second and a half), then rounds begin. */
    void start() {
        sim.at(sim.between(50 * Sim.MS, 1500 * Sim.MS), proc, "warden up", () -> {
            listening = true;
            phase = GatePhase.begin(gateAtPath(), sim.moment());
            sim.log(proc, "listening on its switch socket");
            lease.ifPresent(SimLease::start);
            round();
        });
    }

    boolean listening() {
        return listening && !stopping;
    }

    /** As the keeper's loop, whose last step is the stop ({@link #terminate}): no round after it began. */
    private void round() {
        if (stopping) {
            return;
        }
        GateRound.Result result = rounds.turn(this, phase);
        phase = result.step().phase();
        if (last == null || !last.reason().equals(result.step().reason())) {
            sim.log(proc, result.step().reason());
        }
        last = result.step();
        sim.at(ROUND, proc, "round", this::round);
    }

    /** Its pod serves, as it says: its last round's decision. */
    boolean serving() {
        return last != null && last.serving() && !proc.stopped;
    }

    /**
     * SIGTERM: the keeper stops (its supervisor is told to stop lilbee), the Lease is released if no permit given can
     * still be used (else left to expire), the process exits.
     */
    void terminate() {
        if (!proc.alive || stopping) {
            return;
        }
        sim.at(0, proc, "warden stops", () -> {
            stopping = true;
            lastSaid = "";
            say(new Word.Stop("warden stops"));
            releaseGate();
            awaitStopDone(sim.now() + 4 * Sim.SECOND);
        });
    }

    /**
     * As the keeper's last step does: the Lease is let go once the supervisor says its stop is done, or no permit given
     * can be used any more; past the wait, the process exits and the Lease is left to expire.
     */
    private void awaitStopDone(long deadline) {
        if (lease.isPresent() && phase != null && (supervisorStopDone()
                || rounds.decision().mayLetTheLeaseGo(phase, sim.moment()))) {
            lease.get().release();
        } else if (lease.isPresent() && phase != null && sim.now() < deadline) {
            sim.at(20 * Sim.MS, proc, "waiting for the stop", () -> awaitStopDone(deadline));
            return;
        }
        sim.at(sim.between(10 * Sim.MS, 300 * Sim.MS), proc, "warden exits", () -> sim.die(proc, "exits (SIGTERM)"));
    }

    /** A supervisor's answer to stop {@code number}: no lilbee runs, no permit is held (counted from the one connected). */
    void stopDone(SimSupervisor from, long number) {
        if (from == supervisor) {
            stopAnswered = number;
        }
    }

    /** Asked to step down (its supervisor SIGTERMed, or an operator's switchover): taken at the next round. */
    void askStepDown() {
        if (proc.alive) {
            stepDownAsked = Optional.of(sim.moment());
        }
    }

    /** A newer supervisor connected: it has answered no stop yet. */
    void connected(SimSupervisor newer) {
        supervisor = newer;
        supervisorExited = false;
        stopAnswered = 0;
    }

    /** A report from the supervisor, delivered. */
    void report(Optional<Reported> lilbee, Optional<Moment> permit) {
        reported = lilbee;
        permitReported = permit;
    }

    /** A gate lock given back by a supervisor (its lilbee holds it), arrived: taken in at the next round. */
    void offered(Kernel.Ofd ofd) {
        if (!proc.alive) {
            sim.kernel.drop(ofd);
            return;
        }
        sim.kernel.receive(proc, ofd);
        offers.add(ofd);
    }

    String describe() {
        return (proc.alive ? proc.stopped ? "stopped" : "up" : "dead") + ", " + (last == null ? "no round yet" : last.reason());
    }

    @Override
    public Moment now() {
        return sim.moment();
    }

    /** Adopts a gate lock given back when none is held and it is the file at the path (the lock its open file's). */
    @Override
    public void hearSupervisor() {
        for (Kernel.Ofd ofd : offers) {
            if (gate == null && sim.kernel.at(Sim.GATE).map(inode -> inode == ofd.inode).orElse(false)
                    && sim.kernel.tryExclusive(ofd)) {
                gate = ofd;
                cancelWait();
                sim.log(proc, "holds the gate again: its pod's lilbee held it");
            } else {
                proc.close(ofd);
            }
        }
        offers.clear();
    }

    @Override
    public Observation.Gate gate() {
        if (gate != null) {
            return new Observation.Gate.Held(gate.inode.id(), sim.kernel.at(Sim.GATE).map(i -> i == gate.inode).orElse(false));
        }
        return new Observation.Gate.NotHeld();
    }

    @Override
    public Optional<Observation.Lease> lease() {
        return lease.map(SimLease::look);
    }

    @Override
    public Optional<FileId> gateAtPath() {
        return sim.kernel.idAt(Sim.GATE);
    }

    @Override
    public Optional<FileId> serverAtPath() {
        return sim.kernel.idAt(Sim.SERVER);
    }

    @Override
    public Observation.Server probeServer(Optional<FileId> atPath) {
        Optional<Kernel.Ofd> opened = sim.kernel.open(proc, Sim.SERVER, false);
        if (opened.isEmpty()) {
            return new Observation.Server(atPath, Optional.of(LockProbe.ABSENT), Optional.empty());
        }
        boolean free = sim.kernel.tryExclusive(opened.get());
        proc.close(opened.get());
        return new Observation.Server(atPath, Optional.of(free ? LockProbe.FREE : LockProbe.HELD), Optional.empty());
    }

    @Override
    public boolean supervisorConnected() {
        return supervisor != null && supervisor.proc.alive;
    }

    @Override
    public Optional<Moment> supervisorPermit() {
        return permitReported;
    }

    /** As the switch's: the last word said was a stop, answered by the supervisor connected, or the last one exited. */
    @Override
    public boolean supervisorStopDone() {
        if (!lastKind.equals("stop")) {
            return false;
        }
        return supervisorConnected() ? stopAnswered == stopNumber : supervisorExited;
    }

    @Override
    public Optional<Moment> stepDownAsked() {
        return stepDownAsked;
    }

    @Override
    public Optional<Reported> reportedLilbee() {
        if (sim.mutated(Sim.Mutation.ANY_LOCK_PROVES_LILBEE) || sim.mutated(Sim.Mutation.DECOY_ON_A_REPLACED_FILE_PROVES_LILBEE)) {
            Optional<Reported> decoy = decoyAsLilbee();
            if (decoy.isPresent()) {
                return decoy;
            }
        }
        return reported.filter(r -> sim.kernel.proc(r.pid()).map(p -> p.startTicks == r.startTicks()).orElse(false));
    }

    /** The mutations of the proof: a process of the pod other than its lilbee taken for it, as warden once did. */
    private Optional<Reported> decoyAsLilbee() {
        for (Kernel.Proc decoy : pod.hostile.decoys) {
            if (!decoy.alive || decoy.exclusiveFlocks().isEmpty()) {
                continue;
            }
            boolean onThePath = decoy.exclusiveFlocks().contains(serverAtPath().orElse(null));
            if (sim.mutated(Sim.Mutation.ANY_LOCK_PROVES_LILBEE) && onThePath
                    || sim.mutated(Sim.Mutation.DECOY_ON_A_REPLACED_FILE_PROVES_LILBEE) && !onThePath) {
                return Optional.of(new Reported(decoy.pid, decoy.startTicks, sim.moment().minus(java.time.Duration.ofHours(1))));
            }
        }
        return Optional.empty();
    }

    @Override
    public Set<FileId> holds(Reported lilbee, Set<FileId> wanted) {
        Set<FileId> held = new HashSet<>();
        sim.kernel.proc(lilbee.pid()).ifPresent(p -> {
            boolean decoy = pod.hostile.decoys.contains(p);
            for (FileId file : p.exclusiveFlocks()) {
                if (wanted.contains(file)) {
                    held.add(file);
                } else if (decoy && sim.mutated(Sim.Mutation.DECOY_ON_A_REPLACED_FILE_PROVES_LILBEE)) {
                    // Its lock on a deleted file named server.lock taken for the pod's lilbee's on the path.
                    serverAtPath().ifPresent(held::add);
                }
            }
            // The mutations of the proof knew nothing of the gate lock: the process they took for lilbee passes for
            // one started under this warden's gate, as every lilbee did before it held that lock.
            if (decoy || sim.mutated(Sim.Mutation.LILBEE_WITHOUT_THE_GATE_LOCK)) {
                Optional.ofNullable(gate).ifPresent(g -> held.add(g.inode.id()));
            }
        });
        return held;
    }

    @Override
    public void contend() {
        if (gate != null || waiting != null) {
            return;
        }
        Kernel.Ofd ofd = sim.kernel.open(proc, Sim.GATE, true).orElseThrow();
        if (sim.kernel.tryExclusive(ofd)) {
            won(ofd);
            return;
        }
        waiting = ofd;
        sim.kernel.waitExclusive(ofd, granted -> {
            if (waiting != ofd) {
                return;
            }
            waiting = null;
            if (granted && proc.alive) {
                // The wait in the kernel ended: the next round starts at once.
                won(ofd);
                sim.at(0, proc, "gate won", () -> { });
            }
        });
    }

    /** A win on a file no longer at the path guards nothing: let go, and the next round tries the path again. */
    private void won(Kernel.Ofd ofd) {
        if (sim.kernel.at(Sim.GATE).map(i -> i == ofd.inode).orElse(false)) {
            gate = ofd;
        } else {
            proc.close(ofd);
        }
    }

    private void cancelWait() {
        if (waiting != null) {
            Kernel.Ofd ofd = waiting;
            waiting = null;
            proc.close(ofd);
        }
    }

    @Override
    public void releaseGate() {
        if (gate != null) {
            proc.close(gate);
            gate = null;
        }
        if (retired != null) {
            proc.close(retired);
            retired = null;
        }
    }

    @Override
    public void retireGate() {
        if (gate != null) {
            if (retired != null) {
                proc.close(retired);
            }
            retired = gate;
            gate = null;
        }
    }

    @Override
    public void unlockGate() {
        if (retired != null) {
            sim.kernel.unlock(retired);
            proc.close(retired);
            retired = null;
        }
    }

    @Override
    public void stepAside() {
        lease.ifPresent(SimLease::stepAside);
    }

    @Override
    public void say(Word word) {
        String kind = switch (word) {
            case Word.Start start -> "start";
            case Word.Go go -> "go";
            case Word.Stop stop -> "stop";
            case Word.Silent silent -> null;
        };
        if (kind != null && kind.equals("stop") && !lastKind.equals("stop")) {
            stopNumber++;
        }
        if (kind != null) {
            lastKind = kind;
        }
        if (kind == null || supervisor == null || !supervisor.proc.alive) {
            return;
        }
        if (kind.equals(lastSaid) && sim.now() - lastSaidAt < REPEAT) {
            return;
        }
        lastSaid = kind;
        lastSaidAt = sim.now();
        Kernel.Ofd passed = word instanceof Word.Start && gate != null ? gate : null;
        if (passed != null) {
            sim.kernel.send(passed);
        }
        SimSupervisor to = supervisor;
        long number = stopNumber;
        sim.at(sim.between(0, 3 * Sim.MS), null, "word " + kind, () -> to.deliver(this, word, passed, number));
    }
}
