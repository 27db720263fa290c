package dev.warden.simulation;

import dev.warden.gate.GateAction.Word;
import dev.warden.gate.GateWorld;
import dev.warden.gate.Moment;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * lilbee's supervisor in the simulation: the supervisor's rules ({@link SupervisorRules}, held to the real one's table)
 * in a model of its shell. It connects to its pod's warden when that listens (a peer of warden's UID on a socket only
 * warden's and lilbee's containers mount: nobody else's words reach it), keeps a permit's gate lock and hands it to the
 * lilbee it starts, gives it back to a warden that connects, reports its lilbee once a second and on every change,
 * and does as its rules say. As the chart's ({@code --prepare}), it keeps a prepared lilbee waiting while none runs,
 * and starts lilbee in it on a permit (cold when there is none, or it was killed; another after 30 s). A stopped
 * supervisor hears nothing and does nothing until it goes on.
 */
final class SimSupervisor {

    private static final long TICK = 100 * Sim.MS;
    private static final long REPORT = Sim.SECOND;
    static final long VALIDITY = 5 * Sim.SECOND;
    static final long GRACE = 2 * Sim.SECOND;
    /** The chart's --start-after, its liveness probe's initialDelaySeconds: no lilbee, and no probe, before. */
    static final long START_AFTER = 2 * Sim.SECOND;
    /** A prepared lilbee gone before its permit is replaced no sooner (PREPARE_AGAIN_AFTER). */
    private static final long PREPARE_AGAIN_AFTER = 30 * Sim.SECOND;

    private record Message(Word word, Kernel.Ofd ofd, long stopNumber) {
    }

    final Sim sim;
    final SimPod pod;
    final Kernel.Proc proc;
    /** When its container started: the kubelet probes it from START_AFTER on. */
    final long startedAt;
    private final SupervisorRules rules;
    private SimWarden warden;
    private Kernel.Ofd gate;
    private SimLilbee lilbee;
    private SimLilbee prepared;
    private long prepareAgainAt;
    private Integer exited;
    private final List<Message> inbox = new ArrayList<>();
    private String lastReport = "";
    /** The number of a stop heard and not answered yet (0: none): answered once no lilbee runs and no permit is held. */
    private long ackWanted;
    private long reportedAt;

    SimSupervisor(Sim sim, SimPod pod) {
        this.sim = sim;
        this.pod = pod;
        this.proc = sim.kernel.spawn(pod.node, pod.name + "/supervisor");
        this.startedAt = sim.now();
        // Counted from its container's start, not from its own (later): a lilbee of it may start a little earlier
        // here than there, never later than the probe watches.
        this.rules = SupervisorRules.chart(VALIDITY, GRACE, startedAt + START_AFTER);
        proc.onDeath.add(() -> {
            for (Message message : inbox) {
                if (message.ofd() != null) {
                    sim.kernel.drop(message.ofd());
                }
            }
            inbox.clear();
            if (warden != null) {
                warden.supervisor = null;
            }
        });
    }

    void start() {
        sim.at(sim.between(50 * Sim.MS, 300 * Sim.MS), proc, "supervisor up", () -> {
            if (pod.hostile.squatting) {
                // Its health port is taken: it refuses to run (the kubelet restarts the container, after its back-off).
                sim.die(proc, "exits 1: its health port is taken");
                return;
            }
            sim.log(proc, "up, waiting for warden's word");
            tick();
        });
    }

    Optional<SimLilbee> lilbee() {
        return Optional.ofNullable(lilbee).filter(l -> l.proc.alive);
    }

    /** The prepared lilbee waiting for a permit, if any: it holds nothing. */
    Optional<SimLilbee> prepared() {
        return Optional.ofNullable(prepared).filter(l -> l.proc.alive);
    }

    String describe() {
        return (proc.alive ? proc.stopped ? "supervisor stopped" : "supervisor up" : "supervisor dead") + ", "
                + lilbee().map(SimLilbee::describe).orElse("no lilbee");
    }

    private void tick() {
        connect();
        drain();
        if (exited != null) {
            int code = exited;
            exited = null;
            lilbee = null;
            apply("exited", code);
        }
        prepare();
        apply("tick", 0);
        report();
        acknowledge();
        if (proc.alive) {
            sim.at(TICK, proc, "supervisor tick", this::tick);
        }
    }

    private void connect() {
        SimWarden listening = pod.warden;
        if (warden == null && listening != null && listening.proc.alive && listening.listening()) {
            warden = listening;
            warden.connected(this);
            lastReport = "";
            sim.log(proc, "connected to " + warden.proc);
            if (gate != null && !sim.mutated(Sim.Mutation.LILBEE_WITHOUT_THE_GATE_LOCK)) {
                sim.kernel.send(gate);
                Kernel.Ofd given = gate;
                SimWarden to = warden;
                sim.at(sim.between(0, 3 * Sim.MS), null, "gate given back", () -> to.offered(given));
            }
        } else if (warden == null && sim.mutated(Sim.Mutation.SUPERVISOR_BELIEVES_THE_PORT) && pod.hostile.squatting) {
            // As the supervisor that polled warden's port did: a squatter's answer there says lilbee may start.
            apply("start", sim.now() + VALIDITY);
        }
    }

    void wardenGone(SimWarden gone) {
        if (warden == gone) {
            warden = null;
        }
    }

    /** A word arrives on the socket: heard at once, or once a stopped supervisor goes on. */
    void deliver(SimWarden from, Word word, Kernel.Ofd ofd, long stopNumber) {
        if (!proc.alive) {
            if (ofd != null) {
                sim.kernel.drop(ofd);
            }
            return;
        }
        inbox.add(new Message(word, ofd, stopNumber));
        sim.at(0, proc, "hear", this::drain);
    }

    private void drain() {
        List<Message> messages = List.copyOf(inbox);
        inbox.clear();
        for (Message message : messages) {
            hear(message.word(), message.ofd(), message.stopNumber());
        }
    }

    private void hear(Word word, Kernel.Ofd ofd, long stopNumber) {
        if (ofd != null) {
            sim.kernel.receive(proc, ofd);
        }
        switch (word) {
            case Word.Start start -> {
                if (ofd != null && rules.acceptsGate() && !sim.mutated(Sim.Mutation.LILBEE_WITHOUT_THE_GATE_LOCK)) {
                    if (gate != null) {
                        proc.close(gate);
                    }
                    gate = ofd;
                } else if (ofd != null) {
                    proc.close(ofd);
                }
                apply("start", start.until().nanos());
            }
            case Word.Go go -> apply("go", go.until().nanos());
            case Word.Stop stop -> {
                ackWanted = stopNumber;
                apply("stop", 0);
            }
            case Word.Silent silent -> {
            }
        }
    }

    private void apply(String event, long arg) {
        for (SupervisorRules.Action action : rules.step(sim.now(), event, arg)) {
            switch (action.kind()) {
                case "start" -> startLilbee();
                case "term" -> lilbee().ifPresent(SimLilbee::terminate);
                case "kill" -> lilbee().ifPresent(l -> sim.die(l.proc, "SIGKILL (grace over)"));
                case "signal" -> lilbee().ifPresent(SimLilbee::terminate);
                case "release" -> {
                    if (gate != null) {
                        proc.close(gate);
                        gate = null;
                    }
                }
                case "exit" -> {
                    prepared().ifPresent(p -> sim.die(p.proc, "killed: its supervisor exits"));
                    // Its last word, as the real one's: lilbee is gone and no other will start from here.
                    SimWarden to = warden;
                    if (to != null) {
                        // Heard on this connection only: a newer supervisor connected since speaks for itself.
                        sim.at(sim.between(0, 3 * Sim.MS), null, "exiting", () -> {
                            if (to.supervisor == null) {
                                to.supervisorExited = true;
                            }
                        });
                    }
                    sim.die(proc, "exits " + action.arg());
                }
                default -> throw new IllegalStateException(action.toString());
            }
        }
    }

    private void prepare() {
        if (prepared == null && lilbee == null && rules.terminating == null && sim.now() >= prepareAgainAt) {
            prepared = SimLilbee.prepared(sim, this);
        }
    }

    private void startLilbee() {
        if (prepared().isPresent()) {
            lilbee = prepared;
            prepared = null;
            lilbee.go(gate);
            sim.log(proc, "starts lilbee in its prepared " + lilbee.proc + (gate == null ? "" : " with the gate lock"));
            return;
        }
        lilbee = SimLilbee.cold(sim, this, gate);
        sim.log(proc, "starts " + lilbee.proc + (gate == null ? "" : " with the gate lock"));
    }

    void lilbeeExited(SimLilbee gone, int code) {
        if (gone == lilbee) {
            exited = code;
        } else if (gone == prepared) {
            prepared = null;
            prepareAgainAt = sim.now() + PREPARE_AGAIN_AFTER;
        }
    }

    /** SIGTERM: warden is asked to step down, and it is passed on to lilbee (the rules say so), once the supervisor runs. */
    void terminate() {
        sim.at(0, proc, "SIGTERM", () -> {
            SimWarden to = warden;
            if (to != null) {
                sim.at(sim.between(0, 3 * Sim.MS), null, "step-down", to::askStepDown);
            }
            apply("signal", 15);
        });
    }

    private void report() {
        Optional<GateWorld.Reported> running = lilbee().map(l -> new GateWorld.Reported(l.proc.pid, l.proc.startTicks,
                new Moment(l.launched)));
        Optional<Moment> permit = rules.lilbee == SupervisorRules.Lilbee.RUNNING || rules.hasGate
                ? Optional.of(new Moment(rules.permitUntil)) : Optional.empty();
        String line = running.map(GateWorld.Reported::toString).orElse("none") + " " + permit;
        if (warden == null || line.equals(lastReport) && sim.now() - reportedAt < REPORT) {
            return;
        }
        lastReport = line;
        reportedAt = sim.now();
        SimWarden to = warden;
        sim.at(sim.between(0, 3 * Sim.MS), null, "report", () -> to.report(running, permit));
    }

    /** The stop answered once done, to the warden connected (a stopping warden lets its Lease go on it). */
    private void acknowledge() {
        if (ackWanted != 0 && warden != null && rules.lilbee == SupervisorRules.Lilbee.NONE && !rules.hasGate) {
            long answered = ackWanted;
            ackWanted = 0;
            SimWarden to = warden;
            sim.at(sim.between(0, 3 * Sim.MS), null, "stopped", () -> to.stopDone(this, answered));
        }
    }
}
