package dev.warden.simulation;

import dev.warden.lock.Posix;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;

/**
 * lilbee's supervisor in the simulation: the supervisor's rules ({@link SupervisorRules}, held to the real one's table)
 * in a model of its shell that speaks the switch's protocol, line for line, over the simulated kernel's Unix socket, as
 * helm/warden/files/lilbee-supervisor.py does. It connects to whatever listens at its pod's switch path and believes it
 * only if it is warden (of another container than its own, and while the warden it believed lives, that one), and only
 * after a hello that reads its clock (a late one is asked again); it keeps a permit's gate lock itself, never gives it
 * lilbee, and its lilbee dies with it; to the warden it believes it reports what it runs, the permit and the gate it
 * holds, in one write, on every change and once a second (the first report to a warden that did not give it the gate
 * lock carries the lock's descriptor back), and does as its rules say. As the chart's ({@code --prepare},
 * {@code --prepare-after 2}, {@code --spare}), it keeps a prepared lilbee waiting whenever its rules want one (from its
 * start, none within 2 s of a lilbee's start or exit, and a spare beside a running lilbee), and starts lilbee in it on a
 * permit (cold when there is none, or it was killed; another after 30 s). Undumpable: no process of its UID looks into it or takes its descriptors. A stopped supervisor hears nothing and
 * does nothing until it goes on.
 */
final class SimSupervisor {

    private static final long TICK = 100 * Sim.MS;
    private static final long REPORT = Sim.SECOND;
    private static final long RECONNECT = 200 * Sim.MS;
    private static final long HELLO_AGAIN = 500 * Sim.MS;
    private static final long CLOCK_SKEW = Sim.SECOND;
    static final long PERMIT = 5 * Sim.SECOND;
    static final long GRACE = 2 * Sim.SECOND;
    /** The chart's --start-after, its liveness probe's initialDelaySeconds: no lilbee, and no probe, before. */
    static final long START_AFTER = 2 * Sim.SECOND;
    /** The chart's --prepare-after: no prepared lilbee within it of a lilbee's start or exit (and the chart's --spare). */
    static final long PREPARE_AFTER = 2 * Sim.SECOND;
    /** A prepared lilbee gone before its permit is replaced no sooner (PREPARE_AGAIN_AFTER). */
    private static final long PREPARE_AGAIN_AFTER = 30 * Sim.SECOND;

    final Sim sim;
    final SimPod pod;
    final Kernel.Proc proc;
    /** When its container started: the kubelet probes it from START_AFTER on. */
    final long startedAt;
    private final SupervisorRules rules;
    /** The connection to warden, its descriptor, and the process behind it (SO_PEERCRED). */
    private Kernel.Endpoint warden;
    private int wardenFd;
    private Kernel.Proc wardenProc;
    private boolean trusted;
    /** Whether the warden connected has the gate lock's open file: it gave it, or was given it back. */
    private boolean gateGiven;
    private boolean distrusted;
    private long helloAt;
    private long nextTry;
    /** The warden believed last: while it lives, no other process is. */
    private Kernel.Proc believed;
    private String refusedLast = "";
    private final StringBuilder in = new StringBuilder();
    private Kernel.Ofd gate;
    /** With the gate lock not kept (a mutation): the file it was given, reported as held, as no warden could tell. */
    private dev.warden.lock.FileId notKept;
    private SimLilbee lilbee;
    private SimLilbee prepared;
    private long prepareAgainAt;
    private Integer exited;
    private String lastReport = "";
    /** The number of a stop heard and not answered yet (0: none): answered once no lilbee runs and no permit is held. */
    private long ackWanted;
    private long reportedAt;
    /** With the fallback on a taken health port (a mutation): it runs, and the squatter answers its probes. */
    boolean squatterAnswers;

    SimSupervisor(Sim sim, SimPod pod) {
        this.sim = sim;
        this.pod = pod;
        this.proc = sim.kernel.spawn(pod.node, pod.name + "/supervisor", pod.name, "lilbee", null,
                sim.mutated(Sim.Mutation.SUPERVISOR_DUMPABLE));
        this.startedAt = sim.clock(pod.node);
        // Counted from its container's start, not from its own (later): a lilbee of it may start a little earlier
        // here than there, never later than the probe watches.
        this.rules = SupervisorRules.chart(PERMIT, GRACE, startedAt + START_AFTER, PREPARE_AFTER, startedAt);
    }

    void start() {
        sim.at(sim.between(50 * Sim.MS, 300 * Sim.MS), proc, "supervisor up", () -> {
            if (pod.hostile.squatting) {
                if (!sim.mutated(Sim.Mutation.SUPERVISOR_FALLS_BACK_ON_A_TAKEN_PORT)) {
                    // A family of its health port is taken: it refuses to run (the kubelet restarts it, after its back-off).
                    sim.die(proc, "exits 1: its health port is taken");
                    return;
                }
                squatterAnswers = true;
                sim.log(proc, "its health port is taken on one family: falls back to the other, and the squatter answers"
                        + " the kubelet's probes there");
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

    /** Whether it is connected and has not believed what it is connected to yet: its hello's answer is on its way. */
    boolean greeting() {
        return warden != null && !trusted;
    }

    /** Whether it believes its pod's own warden now: connected to it, and greeted. */
    boolean believesItsWarden() {
        return warden != null && trusted && pod.warden != null && wardenProc == pod.warden.proc;
    }

    String describe() {
        return (proc.alive ? proc.stopped ? "supervisor stopped" : "supervisor up" : "supervisor dead")
                + (warden == null ? ", not connected" : trusted ? ", believes " + wardenProc : ", not yet believing " + wardenProc)
                + ", " + lilbee().map(SimLilbee::describe).orElse("no lilbee");
    }

    private void tick() {
        turn();
        if (proc.alive) {
            sim.at(TICK, proc, "supervisor tick", this::tick);
        }
    }

    /** One pass of its loop: on its tick, and as soon as warden's socket has something to read. */
    private void turn() {
        if (!proc.alive) {
            return;
        }
        connect();
        hello();
        read();
        if (exited != null) {
            int code = exited;
            exited = null;
            lilbee = null;
            apply("exited", code);
        }
        if (!proc.alive) {
            return;
        }
        apply("tick", 0);
        report();
        acknowledge();
    }

    private void connect() {
        if (warden == null && sim.mutated(Sim.Mutation.SUPERVISOR_BELIEVES_THE_PORT) && pod.hostile.squatting) {
            // As the supervisor that polled warden's port did: a squatter's answer there says lilbee may start.
            apply("start", sim.clock(pod.node) + PERMIT);
        }
        if (warden != null || sim.clock(pod.node) < nextTry) {
            return;
        }
        nextTry = sim.clock(pod.node) + RECONNECT;
        Kernel.Endpoint connection;
        try {
            connection = sim.kernel.connect(proc, sim.kernel.dir(proc, Kernel.SWITCH_DIR).orElseThrow(), "switch.sock");
        } catch (Posix.ErrnoException e) {
            return;
        }
        Optional<String> refused = refusal(connection.peerCred);
        if (refused.isPresent()) {
            connection.close();
            if (!refused.get().equals(refusedLast)) {
                refusedLast = refused.get();
                sim.log(proc, "does not believe " + connection.peerCred + " at the switch path: " + refused.get());
            }
            return;
        }
        warden = connection;
        wardenFd = proc.install(connection);
        wardenProc = connection.peerCred;
        connection.onReadable = () -> sim.at(0, proc, "warden's socket readable", this::turn);
        trusted = false;
        gateGiven = false;
        distrusted = false;
        helloAt = sim.clock(pod.node);
        in.setLength(0);
        lastReport = "";
        // A stop is answered to the warden that said it: another numbers its stops its own way.
        if (!sim.mutated(Sim.Mutation.STOP_ANSWERED_ACROSS_CONNECTIONS)) {
            ackWanted = 0;
        }
        refusedLast = "";
        sim.log(proc, "connected to " + wardenProc);
    }

    /** What the real one's WardenIdentity says of the process listening at the path: why it is not warden, if it is not. */
    private Optional<String> refusal(Kernel.Proc listening) {
        if (sim.mutated(Sim.Mutation.SUPERVISOR_BELIEVES_ANY_PEER)) {
            return Optional.empty();
        }
        if (listening == proc || descends(listening)) {
            return Optional.of("it is this supervisor, or a process it started");
        }
        if (believed != null && believed.alive && believed != listening) {
            return Optional.of("warden is " + believed + ", which still runs");
        }
        if (listening.pod.equals(proc.pod) && listening.container.equals(proc.container)) {
            return Optional.of("it runs in this container");
        }
        return Optional.empty();
    }

    private boolean descends(Kernel.Proc other) {
        for (Kernel.Proc up = other.parent; up != null; up = up.parent) {
            if (up == proc) {
                return true;
            }
        }
        return false;
    }

    private void hello() {
        if (warden != null && !trusted && sim.clock(pod.node) >= helloAt) {
            send("hello 1 " + proc.pid, null);
            helloAt = sim.clock(pod.node) + HELLO_AGAIN;
        }
    }

    private void send(String line, Kernel.Ofd pass) {
        if (warden == null) {
            return;
        }
        try {
            warden.send((line + "\n").getBytes(StandardCharsets.US_ASCII), pass);
        } catch (Posix.ErrnoException e) {
            lost();
        }
    }

    private void lost() {
        if (warden != null) {
            proc.close(wardenFd);
            warden = null;
            trusted = false;
            sim.log(proc, "lost warden: lilbee may run until its permit ends, no longer");
        }
    }

    private void read() {
        while (warden != null) {
            Kernel.Received got = warden.receive(proc, 4096);
            if (got == null) {
                return;
            }
            if (got.bytes().length == 0) {
                lost();
                return;
            }
            in.append(new String(got.bytes(), StandardCharsets.US_ASCII));
            List<Kernel.Ofd> fds = new java.util.ArrayList<>(got.fds());
            int newline;
            while ((newline = in.indexOf("\n")) >= 0) {
                String line = in.substring(0, newline);
                in.delete(0, newline + 1);
                List<Kernel.Ofd> given = line.startsWith("start ") ? List.copyOf(fds) : List.of();
                fds.removeAll(given);
                hear(line, given);
            }
            for (Kernel.Ofd stray : fds) {
                proc.close(stray);
            }
        }
    }

    private void hear(String line, List<Kernel.Ofd> fds) {
        String[] words = line.split(" ");
        try {
            if (words[0].equals("hello") && words.length == 3 && !trusted) {
                long lag = sim.clock(pod.node) - Long.parseLong(words[2]);
                if (lag >= -CLOCK_SKEW / 100 && lag <= CLOCK_SKEW && !distrusted) {
                    trusted = true;
                    believed = wardenProc;
                } else if (sim.mutated(Sim.Mutation.SUPERVISOR_DISTRUSTS_FOR_GOOD)) {
                    // As the supervisor did: a hello read late distrusted warden for the life of the connection.
                    distrusted = true;
                }
            } else if (trusted && words[0].equals("start") && words.length == 2) {
                long until = Long.parseLong(words[1]);
                Kernel.Ofd given = fds.isEmpty() ? null : fds.getFirst();
                for (Kernel.Ofd extra : fds.subList(Math.min(1, fds.size()), fds.size())) {
                    proc.close(extra);
                }
                if (given != null && rules.acceptsGate() && sim.mutated(Sim.Mutation.SUPERVISOR_WITHOUT_THE_GATE_LOCK)) {
                    notKept = given.inode.id();
                    proc.close(given);
                } else if (given != null && rules.acceptsGate()) {
                    if (gate != null) {
                        proc.close(gate);
                    }
                    gate = given;
                    gateGiven = true;
                } else if (given != null) {
                    proc.close(given);
                }
                fds = List.of();
                apply("start", until);
            } else if (trusted && words[0].equals("go") && words.length == 2) {
                apply("go", Long.parseLong(words[1]));
            } else if (trusted && words[0].equals("stop")) {
                if (words.length >= 2 && words[1].chars().allMatch(Character::isDigit) && !words[1].isEmpty()) {
                    ackWanted = Long.parseLong(words[1]);
                }
                apply("stop", 0);
            }
        } catch (NumberFormatException e) {
            // not the protocol: ignored
        }
        for (Kernel.Ofd unused : fds) {
            proc.close(unused);
        }
    }

    private void apply(String event, long arg) {
        for (SupervisorRules.Action action : rules.step(sim.clock(pod.node), event, arg)) {
            switch (action.kind()) {
                case "start" -> startLilbee();
                case "term" -> lilbee().ifPresent(SimLilbee::terminate);
                case "kill" -> lilbee().ifPresent(l -> sim.die(l.proc, "SIGKILL (grace over)"));
                case "signal" -> lilbee().ifPresent(SimLilbee::terminate);
                case "release" -> {
                    notKept = null;
                    if (gate != null) {
                        proc.close(gate);
                        gate = null;
                    }
                }
                case "warm" -> prepare();
                case "exit" -> {
                    prepared().ifPresent(p -> sim.die(p.proc, "killed: its supervisor exits"));
                    // Its last word: lilbee is gone and no other will start from here.
                    send("exiting", null);
                    sim.die(proc, "exits " + action.arg());
                    return;
                }
                default -> throw new IllegalStateException(action.toString());
            }
        }
    }

    /** A prepared lilbee kept, as the rules want one: started when there is none, and not again soon after one died. */
    private void prepare() {
        if (prepared == null && sim.clock(pod.node) >= prepareAgainAt) {
            prepared = SimLilbee.prepared(sim, this);
        }
    }

    private void startLilbee() {
        // The gate lock stays here; as a mutation, lilbee is given a descriptor of it too, as it was before.
        Kernel.Ofd handed = sim.mutated(Sim.Mutation.LILBEE_HOLDS_THE_GATE) ? gate : null;
        if (prepared().isPresent()) {
            lilbee = prepared;
            prepared = null;
            lilbee.go(handed);
            sim.log(proc, "starts lilbee in its prepared " + lilbee.proc);
            return;
        }
        lilbee = SimLilbee.cold(sim, this, handed);
        sim.log(proc, "starts " + lilbee.proc);
    }

    void lilbeeExited(SimLilbee gone, int code) {
        if (gone == lilbee) {
            exited = code;
        } else if (gone == prepared) {
            prepared = null;
            prepareAgainAt = sim.clock(pod.node) + PREPARE_AGAIN_AFTER;
        }
    }

    /** SIGTERM: warden is asked to step down, and it is passed on to lilbee (the rules say so), once the supervisor runs. */
    void terminate() {
        sim.at(0, proc, "SIGTERM", () -> {
            if (rules.terminating == null) {
                send("step-down", null);
            }
            apply("signal", 15);
        });
    }

    /** Its report, in one write: the gate lock it holds first, so that no lilbee is ever read without it. */
    private void report() {
        String running = lilbee().map(l -> "lilbee " + l.proc.pid + " " + l.proc.startTicks + " " + l.launched)
                .orElse("lilbee none");
        long permit = rules.lilbee == SupervisorRules.Lilbee.RUNNING || rules.hasGate ? rules.permitUntil : 0;
        dev.warden.lock.FileId holding = gate != null ? gate.inode.id() : notKept;
        String held = holding == null ? "gate none" : "gate " + holding.device() + " " + holding.inode();
        String warm = prepared().map(p -> "warm " + p.proc.pid).orElse("warm none");
        String line = held + "\n" + running + "\npermit " + permit + "\n" + warm;
        if (warden == null || !trusted || line.equals(lastReport) && sim.clock(pod.node) - reportedAt < REPORT) {
            return;
        }
        lastReport = line;
        reportedAt = sim.clock(pod.node);
        // The gate lock's open file goes back with the first report to a warden believed that does not hold it.
        Kernel.Ofd giveBack = gateGiven ? null : gate;
        gateGiven = true;
        send(line, giveBack);
    }

    /** The stop answered once done, to the warden connected (a stopping warden lets its Lease go on it). */
    private void acknowledge() {
        if (ackWanted != 0 && warden != null && rules.lilbee == SupervisorRules.Lilbee.NONE && !rules.hasGate) {
            send("stopped " + ackWanted, null);
            ackWanted = 0;
        }
    }

    /** The gate lock's open file it holds for its lilbee, if any: what a process that takes its descriptors could get. */
    Optional<Kernel.Ofd> gate() {
        return Optional.ofNullable(gate);
    }
}
