package dev.warden.simulation;

import dev.warden.gate.GateDecision;
import dev.warden.gate.GateTimings;
import dev.warden.gate.Moment;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.Set;
import java.util.function.Function;

/**
 * A seeded, single-threaded, deterministic model of gate mode: pods on one data dir, each with its warden (the real
 * {@link dev.warden.gate.GateRound} and {@link GateDecision} in a model of its edges), its lilbee supervisor (the
 * supervisor's rules, {@link SupervisorRules}) and lilbee, a kubelet with the chart's probes and back-offs, a kernel
 * with flock by open file and inode, a hostile neighbour in every pod, and in lease mode an API server that answers
 * late, stalls or refuses. Time is simulated: one event at a time, in order, each a step; after every step the
 * invariant is checked: never two lilbees holding an exclusive flock on a file that was this data dir's server.lock.
 * A run is chaos (faults at random) then quiet (faults undone); at its end exactly one pod must serve.
 *
 * <p>Everything random comes from the seed: a failure replays from it, step for step.
 */
public final class Sim {

    static final long MS = 1_000_000L;
    static final long SECOND = 1_000_000_000L;
    static final String GATE = "warden-gate.lock";
    static final String SERVER = "server.lock";

    /** A fix of a split brain found before, undone, to show that the simulation finds that split brain again. */
    public enum Mutation {
        /** Any lock any process of the pod takes on server.lock proves this pod's lilbee (issue 21's first). */
        ANY_LOCK_PROVES_LILBEE,
        /** The supervisor neither hands warden's gate lock to lilbee nor keeps it while lilbee runs. */
        LILBEE_WITHOUT_THE_GATE_LOCK,
        /** A process of the pod holding an exclusive flock on a deleted or renamed server.lock counts as its lilbee. */
        DECOY_ON_A_REPLACED_FILE_PROVES_LILBEE,
        /** lilbee's supervisor believes whoever answers on warden's management port (a squatter while warden is down). */
        SUPERVISOR_BELIEVES_THE_PORT
    }

    /** What one run is: the election, the pods, how long the chaos lasts and how often faults come. */
    record Config(boolean lease, int pods, int nodes, long chaosNanos, long quietNanos, long meanFaultNanos,
            GateTimings timings, Set<Mutation> mutations, Function<GateTimings, GateDecision> decisions) {

        /** A run drawn from the seed: file or lease election, two or three pods, one to two minutes of chaos. */
        static Config drawn(Random random, Set<Mutation> mutations, Function<GateTimings, GateDecision> decisions) {
            boolean lease = random.nextBoolean();
            int pods = 2 + random.nextInt(2);
            GateTimings timings = new GateTimings(Duration.ofSeconds(10), Duration.ofSeconds(5), Duration.ofSeconds(2),
                    Duration.ofSeconds(4), Duration.ofSeconds(10), lease
                            ? Optional.of(new GateTimings.Lease(Duration.ofSeconds(15), Duration.ofSeconds(10), Duration.ofSeconds(2)))
                            : Optional.empty());
            // The neighbours' random faults: none at all (the adversary's alone, which then play out cleanly), now and
            // then, or a storm.
            long[] noise = {0, (8 + random.nextInt(8)) * SECOND, (2 + random.nextInt(4)) * SECOND};
            return new Config(lease, pods, lease ? pods : 1, (60 + random.nextInt(61)) * SECOND, 400 * SECOND,
                    noise[random.nextInt(noise.length)], timings, mutations, decisions);
        }
    }

    /** A split brain (or a pod that never served), with the moment, the steps taken and the trace that led there. */
    public record Violation(String what, long seed, long step, long at, List<String> trace) {
        public String report() {
            return "seed " + seed + ", step " + step + ", at " + seconds(at) + ": " + what + "\n  replay it: -Dwarden.sim.seed="
                    + seed + "\n  the last " + trace.size() + " events:\n    " + String.join("\n    ", trace);
        }
    }

    public record Outcome(long steps, Optional<Violation> violation, List<String> trace) {
    }

    private record Event(long at, long seq, Kernel.Proc owner, String what, Runnable action) {
    }

    final long seed;
    final Random random;
    final Config config;
    final Kernel kernel = new Kernel(woken -> at(MS, null, "the lock's waiters run", woken));
    final List<SimPod> pods = new ArrayList<>();
    final Set<SimLilbee> lilbees = new HashSet<>();
    final Optional<SimApiServer> api;
    private final PriorityQueue<Event> queue = new PriorityQueue<>((a, b) -> a.at != b.at ? Long.compare(a.at, b.at)
            : Long.compare(a.seq, b.seq));
    private final Map<Kernel.Proc, List<Event>> deferred = new HashMap<>();
    private final Deque<String> trace = new ArrayDeque<>();
    private final int traceLength;
    private long now = 1000 * SECOND;
    /** The wall clock's offset from the monotonic clock, per node: the hostile makes it jump. */
    private final long[] wallOffset;
    private long seq;
    private long steps;
    private long podsCreated;
    boolean chaos = true;
    private Violation violation;

    Sim(long seed, Config config, int traceLength) {
        this.seed = seed;
        this.random = new Random(new java.util.SplittableRandom(~seed).nextLong());
        this.config = config;
        this.traceLength = traceLength;
        this.wallOffset = new long[config.nodes()];
        this.api = config.lease() ? Optional.of(new SimApiServer(this)) : Optional.empty();
    }

    public static Outcome run(long seed, long maxSteps, int traceLength, Set<Mutation> mutations,
            Function<GateTimings, GateDecision> decisions) {
        // java.util.Random's first draws barely differ for seeds next to each other: both are drawn from a mix of it.
        Random drawing = new Random(new java.util.SplittableRandom(seed).nextLong());
        Sim sim = new Sim(seed, Config.drawn(drawing, mutations, decisions), traceLength);
        return sim.run(maxSteps);
    }

    Outcome run(long maxSteps) {
        log(null, "a run: " + (config.lease() ? "lease" : "file") + " election, " + config.pods() + " pods on " + config.nodes()
                + " node(s), " + seconds(config.chaosNanos()) + " of chaos, " + (config.meanFaultNanos() == 0
                        ? "the adversary's faults alone" : "a neighbour's fault every " + seconds(config.meanFaultNanos())
                        + " on average") + (config.mutations().isEmpty() ? "" : ", mutated: " + config.mutations()));
        for (int i = 0; i < config.pods(); i++) {
            newPod(i % config.nodes());
        }
        long end = now + config.chaosNanos() + config.quietNanos();
        at(config.chaosNanos(), null, "the chaos ends", this::quiet);
        new SimAdversary(this).next();
        while (violation == null && !queue.isEmpty() && steps < maxSteps) {
            Event event = queue.poll();
            if (event.at > end) {
                break;
            }
            now = event.at;
            if (event.owner != null) {
                if (!event.owner.alive) {
                    continue;
                }
                if (event.owner.stopped) {
                    deferred.computeIfAbsent(event.owner, p -> new ArrayList<>()).add(event);
                    continue;
                }
            }
            steps++;
            event.action.run();
            check();
        }
        if (violation == null && steps < maxSteps) {
            served();
        }
        return new Outcome(steps, Optional.ofNullable(violation), List.copyOf(trace));
    }

    SimPod newPod(int node) {
        SimPod pod = new SimPod(this, "pod-" + ++podsCreated, node);
        pods.add(pod);
        pod.start();
        return pod;
    }

    /** The chaos is over: every stopped process goes on, every decoy and squatter goes, the API server answers again. */
    private void quiet() {
        chaos = false;
        log(null, "quiet: faults end, stopped processes continue, decoys and squatters go");
        for (SimPod pod : List.copyOf(pods)) {
            pod.hostile.undo();
        }
        api.ifPresent(SimApiServer::heal);
    }

    /** The invariant, after every step: at most one lilbee holds an exclusive flock on a file that was server.lock. */
    private void check() {
        if (violation != null) {
            return;
        }
        List<SimLilbee> holding = lilbees.stream().filter(SimLilbee::holdsServerLock).toList();
        if (holding.size() > 1) {
            fail("two lilbees hold an exclusive flock on a server.lock: " + holding);
        }
    }

    /** At the end of the quiet: exactly one pod serves, its lilbee on the server.lock at the path. */
    private void served() {
        List<SimPod> serving = pods.stream().filter(SimPod::serving).toList();
        if (serving.size() != 1) {
            fail(serving.size() + " pods serve " + seconds(config.quietNanos()) + " after the last fault (one must): "
                    + pods.stream().map(SimPod::describe).toList());
        }
    }

    void fail(String what) {
        if (violation == null) {
            log(null, "VIOLATION: " + what);
            violation = new Violation(what, seed, steps, now, List.copyOf(trace));
        }
    }

    /** Schedules {@code action} in {@code delay}; an owner's events wait while it is stopped and end with it. */
    void at(long delay, Kernel.Proc owner, String what, Runnable action) {
        queue.add(new Event(now + Math.max(0, delay), seq++, owner, what, action));
    }

    /** SIGSTOP: the process runs nothing until SIGCONT. */
    void stop(Kernel.Proc proc) {
        if (proc.alive && !proc.stopped) {
            proc.stopped = true;
            log(proc, "SIGSTOP");
        }
    }

    /** SIGCONT: what it would have run meanwhile runs now, in order. */
    void resume(Kernel.Proc proc) {
        if (proc.alive && proc.stopped) {
            proc.stopped = false;
            log(proc, "SIGCONT");
            for (Event event : deferred.getOrDefault(proc, List.of())) {
                queue.add(new Event(now, seq++, event.owner, event.what, event.action));
            }
            deferred.remove(proc);
        }
    }

    void die(Kernel.Proc proc, String how) {
        if (proc.alive) {
            log(proc, how);
            deferred.remove(proc);
            kernel.die(proc);
        }
    }

    Moment moment() {
        return new Moment(now);
    }

    long now() {
        return now;
    }

    Instant wall(int node) {
        return Instant.ofEpochSecond(0, now + wallOffset[node]);
    }

    void jumpWall(int node, long by) {
        wallOffset[node] += by;
        log(null, "node " + node + "'s wall clock jumps by " + seconds(by));
    }

    long between(long from, long to) {
        return from + (long) (random.nextDouble() * (to - from));
    }

    boolean chance(double p) {
        return random.nextDouble() < p;
    }

    void log(Kernel.Proc who, String what) {
        trace.addLast(seconds(now) + " " + (who == null ? "" : who + " ") + what);
        while (trace.size() > traceLength) {
            trace.removeFirst();
        }
    }

    static String seconds(long nanos) {
        return String.format(java.util.Locale.ROOT, "%.3fs", nanos / 1e9);
    }

    boolean mutated(Mutation mutation) {
        return config.mutations().contains(mutation);
    }

    public static Set<Mutation> none() {
        return EnumSet.noneOf(Mutation.class);
    }
}
