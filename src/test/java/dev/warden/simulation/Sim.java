package dev.warden.simulation;

import dev.warden.gate.GateDecision;
import dev.warden.gate.GateTimings;
import dev.warden.gate.pod.LilbeeSwitch;
import dev.warden.lock.Posix;
import dev.warden.lock.ProcFs;
import dev.warden.time.Moment;
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
 * A seeded, single-threaded, deterministic simulation of gate mode: pods on one data dir, each with its warden (the
 * production gate, {@link dev.warden.gate.pod.PodGate}, over a simulated kernel: {@link SimWarden}), its lilbee supervisor
 * (the supervisor's rules, {@link SupervisorRules}, speaking the switch's protocol: {@link SimSupervisor}) and lilbee, a
 * kubelet with the chart's probes and back-offs, a kernel with directories, descriptors, flock by open file and inode,
 * Unix sockets and dumpability ({@link Kernel}), a hostile neighbour in every pod that also speaks the protocol
 * ({@link SimNeighbour}), and in lease mode an API server that answers late, stalls or refuses. Time is simulated: one
 * event at a time, in order, each a step; after every step the invariant is checked: never two lilbees serving on
 * files that were this data dir's server.lock. A run is chaos (faults at random) then quiet (faults undone, but a
 * neighbour of lilbee's container still speaking); through the last 100 s exactly one pod must serve, and every pod
 * left must be ready to.
 *
 * <p>Everything random comes from the seed: a failure replays from it, step for step.
 */
public final class Sim {

    static final long MS = 1_000_000L;
    static final long SECOND = 1_000_000_000L;
    static final String GATE = "warden-gate.lock";
    static final String SERVER = "server.lock";
    static final dev.warden.config.LilbeePaths PATHS = new dev.warden.config.LilbeePaths(java.nio.file.Path.of("/"),
            java.nio.file.Path.of(Kernel.DATA), java.nio.file.Path.of(Kernel.DATA, "lancedb"), Optional.empty(), "the simulation");
    /** How long the end of the quiet must serve steadily. */
    private static final long STEADY = 100 * SECOND;
    /**
     * The most a node's clock runs fast or slow (1 %: twenty times what NTP bounds a disciplined clock to): docs/modes.md
     * says what it costs the pause tolerance.
     */
    static final double MAX_SKEW = 0.01;

    /** A fix undone, to show that the simulation finds what it keeps out. */
    public enum Mutation {
        /** Any lock any process of the pod takes on server.lock proves this pod's lilbee (issue 21's first). */
        ANY_LOCK_PROVES_LILBEE,
        /** The supervisor does not keep warden's gate lock while lilbee runs. */
        SUPERVISOR_WITHOUT_THE_GATE_LOCK,
        /** A process of the pod holding an exclusive flock on a deleted or renamed server.lock counts as its lilbee. */
        DECOY_ON_A_REPLACED_FILE_PROVES_LILBEE,
        /** lilbee's supervisor believes whoever answers on warden's management port (a squatter while warden is down). */
        SUPERVISOR_BELIEVES_THE_PORT,
        /** The supervisor believes whatever listens at the switch path, of warden's UID (lilbee's container's too). */
        SUPERVISOR_BELIEVES_ANY_PEER,
        /** lilbee, dumpable, is given a descriptor of the gate lock too. */
        LILBEE_HOLDS_THE_GATE,
        /** The supervisor is dumpable: a process of its UID can take its descriptors. */
        SUPERVISOR_DUMPABLE,
        /** lilbee dies with its container's cleanup, a moment after its supervisor, not with it. */
        LILBEE_OUTLIVES_ITS_SUPERVISOR,
        /** warden takes the gate lock it took as held, without looking: one unlocked under it still counts. */
        GATE_LOCK_ASSUMED,
        /** A supervisor whose health port is taken on one family serves on the other, and the squatter answers the kubelet. */
        SUPERVISOR_FALLS_BACK_ON_A_TAKEN_PORT,
        /** A hello read late distrusts warden for the life of the connection. */
        SUPERVISOR_DISTRUSTS_FOR_GOOD,
        /** Any number of step-downs a supervisor asks for is taken, at any pace. */
        STEP_DOWNS_UNLIMITED,
        /** A restarted warden counts no permit of its previous run: its Lease may go while one still keeps a lilbee. */
        PREVIOUS_RUNS_PERMITS_FORGOTTEN,
        /**
         * A supervisor answers a stop to whichever warden it is connected to next, and warden takes an answer to any
         * number: a previous warden's stop, answered to a restarted one, counts as its own.
         */
        STOP_ANSWERED_ACROSS_CONNECTIONS,
        /** A silent gate lock's holder is gone after four beats, though its lilbee outlives its last permit by longer. */
        HEARTBEAT_WINDOW_WITHOUT_THE_PERMIT,
        /** A gate lock taken counts as reaching every pod, while its heartbeat names a holder on another node. */
        ANY_TAKE_PROVES_THE_LOCK_REACHES,
        /** A standby whose gate lock another pod holds too takes a record saying released, or none, as that pod gone. */
        A_STANDBY_TRUSTS_A_RELEASED_RECORD,
        /** The first of two gate lock holders keeps serving after a pause past the window, while the other took over. */
        THE_FIRST_HOLDER_KEEPS_SERVING_AFTER_A_PAUSE,
        /** A node frozen longer than the margin its election leaves (docs/modes.md says how long): no longer a fix. */
        NODES_FROZEN_PAST_THE_MARGIN,
        /** Each clock off by up to 40 %, where the timings tolerate about 10 % without a pause (docs/modes.md). */
        CLOCKS_SKEWED_PAST_THE_MARGIN;

    }

    /**
     * Which runs a search looks at: every kind as drawn, or (FoundationDB's buggify: the dice weighted towards where a fix
     * matters) only Lease elections, or only file elections on a volume whose locks stay on each node.
     */
    public enum Focus {
        DRAWN, LEASE, NODE_LOCAL_FILES,
        /**
         * Lease elections whose adversary (the neighbours' faults and the freezes go on) always hands over, by a step-down
         * or a graceful deletion, and kills the warden handing over.
         */
        LEASE_HANDOVERS_KILLED,
        /**
         * Runs as drawn, half of whose neighbours' faults SIGKILL their pod's supervisor: lilbee's container dies, and the
         * kubelet restarts it later each time (its back-off), so an elected pod that cannot serve for long is frequent.
         */
        CRASH_LOOPS
    }

    /**
     * What one run is: the election, the pods, how long the chaos lasts and how often faults come, whether lilbee's
     * container can write the switch directory (a runtime that ignores its read-only mount), and the production classes
     * it runs (a mutation test gives its own).
     */
    record Config(boolean lease, int pods, int nodes, long chaosNanos, long quietNanos, long meanFaultNanos,
            boolean switchWritable, GateTimings timings, Set<Mutation> mutations, Function<GateTimings, GateDecision> decisions,
            Switches switches, double skew, Focus focus) {

        /** A run drawn from the seed: file or lease election, two or three pods, one to two minutes of chaos. */
        static Config drawn(Random random, Set<Mutation> mutations, Function<GateTimings, GateDecision> decisions,
                Switches switches, Focus focus) {
            boolean lease = (random.nextBoolean() || focus == Focus.LEASE || focus == Focus.LEASE_HANDOVERS_KILLED)
                    && focus != Focus.NODE_LOCAL_FILES;
            int pods = 2 + random.nextInt(2);
            GateTimings timings = new GateTimings(Duration.ofSeconds(10), Duration.ofSeconds(5), Duration.ofSeconds(2),
                    Duration.ofSeconds(4), Duration.ofSeconds(10), lease
                            ? Optional.of(new GateTimings.Lease(Duration.ofSeconds(15), Duration.ofSeconds(10), Duration.ofSeconds(2)))
                            : Optional.empty());
            // The neighbours' random faults: none at all (the adversary's alone, which then play out cleanly), now and
            // then, or a storm.
            long[] noise = {0, (8 + random.nextInt(8)) * SECOND, (2 + random.nextInt(4)) * SECOND};
            long chaos = (60 + random.nextInt(61)) * SECOND;
            long meanFault = noise[random.nextInt(noise.length)];
            boolean switchWritable = random.nextBoolean();
            // File election on one node, or (one run in three) on a volume whose locks stay on each node: two nodes,
            // where the gate lock's heartbeat alone keeps the second pod out. Drawn last, so that every other draw of a
            // seed is what it was before volumes of this kind were simulated.
            int nodes = lease ? pods : random.nextInt(3) == 0 || focus == Focus.NODE_LOCAL_FILES ? 2 : 1;
            // Each node's clock runs at its own rate, within the skew (drawn last again): none, NTP's worst (500 ppm), or
            // twenty times that.
            double[] skews = {0, 0.0005, MAX_SKEW};
            double skew = mutations.contains(Mutation.CLOCKS_SKEWED_PAST_THE_MARGIN) ? 0.4 : skews[random.nextInt(skews.length)];
            return new Config(lease, pods, nodes, chaos, 400 * SECOND, meanFault, switchWritable, timings, mutations,
                    decisions, switches, skew, focus);
        }
    }

    /** How a warden opens its switch: {@link LilbeeSwitch#open}, or a mutation's. */
    @FunctionalInterface
    public interface Switches {
        LilbeeSwitch open(Posix posix, ProcFs procs, java.nio.file.Path path, int uid) throws java.io.IOException;
    }

    /** A split brain (or a pod that never served), with the moment, the steps taken and the trace that led there. */
    public record Violation(String what, long seed, long step, long at, List<String> trace) {
        public String report() {
            return "seed " + seed + ", step " + step + ", at " + seconds(at) + ": " + what + "\n  replay it: -Dwarden.sim.seed="
                    + seed + "\n  the last " + trace.size() + " events:\n    " + String.join("\n    ", trace);
        }
    }

    /**
     * @param longestUnserved the longest the quiet went with a pod able to serve and none serving (the liveness bound's
     *     measure)
     */
    public record Outcome(long steps, Optional<Violation> violation, List<String> trace, long longestUnserved) {
    }

    /** @param look a check of the world's (the liveness check's), not a step of it: not counted as one */
    private record Event(long at, long seq, Kernel.Proc owner, String what, Runnable action, boolean look) {
        Event(long at, long seq, Kernel.Proc owner, String what, Runnable action) {
            this(at, seq, owner, what, action, false);
        }
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
    /** Until when each frozen node is frozen. */
    private final Map<Integer, Long> frozenUntil = new HashMap<>();
    private final Deque<String> trace = new ArrayDeque<>();
    private final int traceLength;
    private long now = 1000 * SECOND;
    private final long startedAt = now;
    /** The wall clock's offset from the monotonic clock, per node: the hostile makes it jump. */
    private final long[] wallOffset;
    /** Each node's clock rate against the simulation's time: within 1 ± the run's skew, on dice of their own. */
    private final double[] rate;
    private long seq;
    private long steps;
    private long podsCreated;
    boolean chaos = true;
    private Violation violation;
    /** Since when, in the quiet, a pod could serve and none does; -1 while one serves or none could. */
    private long unservedSince = -1;
    private long longestUnserved;

    Sim(long seed, Config config, int traceLength) {
        this.seed = seed;
        this.random = new Random(new java.util.SplittableRandom(~seed).nextLong());
        this.config = config;
        this.traceLength = traceLength;
        this.wallOffset = new long[config.nodes()];
        this.rate = new double[config.nodes()];
        Random rates = new Random(new java.util.SplittableRandom(seed * 131 + 7).nextLong());
        // In half the runs the nodes alternate between the skew's two ends, the worst it allows; else each is drawn.
        boolean ends = rates.nextBoolean();
        for (int node = 0; node < rate.length; node++) {
            rate[node] = 1 + config.skew() * (ends ? (node % 2 == 0 ? -1 : 1) : 2 * rates.nextDouble() - 1);
        }
        this.api = config.lease() ? Optional.of(new SimApiServer(this, config.timings().lease().orElseThrow().duration())) : Optional.empty();
    }

    public static Outcome run(long seed, long maxSteps, int traceLength, Set<Mutation> mutations,
            Function<GateTimings, GateDecision> decisions) {
        return run(seed, maxSteps, traceLength, mutations, decisions, LilbeeSwitch::open);
    }

    /**
     * The production classes' own log, silent while the simulation runs them (a run's trace says what happened; their
     * warnings, by the thousand, would say it again): kept here, as a logger's level lasts only as long as the logger.
     */
    private static final java.util.logging.Logger GATE_LOG = java.util.logging.Logger.getLogger("dev.warden");

    public static Outcome run(long seed, long maxSteps, int traceLength, Set<Mutation> mutations,
            Function<GateTimings, GateDecision> decisions, Switches switches) {
        return run(seed, maxSteps, traceLength, mutations, decisions, switches, Focus.DRAWN);
    }

    public static Outcome run(long seed, long maxSteps, int traceLength, Set<Mutation> mutations,
            Function<GateTimings, GateDecision> decisions, Switches switches, Focus focus) {
        return quietly(() -> {
            // java.util.Random's first draws barely differ for seeds next to each other: both are drawn from a mix of it.
            Random drawing = new Random(new java.util.SplittableRandom(seed).nextLong());
            Sim sim = new Sim(seed, Config.drawn(drawing, mutations, decisions, switches, focus), traceLength);
            return sim.run(maxSteps);
        });
    }

    /**
     * Runs {@code run} seed after seed from {@code first}, each seed taken in order by the next free core, until the
     * runs done hold {@code budget} steps or no seed is left below the lowest whose outcome {@code stop} accepts: at
     * least every seed a search one seed at a time would take, whatever the cores (each run is its seed's alone).
     */
    public static Map<Long, Outcome> runSeeds(long first, long budget, java.util.function.LongFunction<Outcome> run,
            java.util.function.Predicate<Outcome> stop) {
        Map<Long, Outcome> outcomes = new java.util.concurrent.ConcurrentHashMap<>();
        java.util.concurrent.atomic.AtomicLong nextSeed = new java.util.concurrent.atomic.AtomicLong(first);
        java.util.concurrent.atomic.AtomicLong stepsRun = new java.util.concurrent.atomic.AtomicLong();
        java.util.concurrent.atomic.AtomicLong lowestStop = new java.util.concurrent.atomic.AtomicLong(Long.MAX_VALUE);
        Runnable runner = () -> {
            while (stepsRun.get() < budget) {
                long seed = nextSeed.getAndIncrement();
                if (seed > lowestStop.get()) {
                    return;
                }
                Outcome outcome = run.apply(seed);
                outcomes.put(seed, outcome);
                stepsRun.addAndGet(outcome.steps());
                if (stop.test(outcome)) {
                    lowestStop.accumulateAndGet(seed, Math::min);
                }
            }
        };
        int cores = Runtime.getRuntime().availableProcessors();
        return quietly(() -> {
            try (java.util.concurrent.ExecutorService runners = java.util.concurrent.Executors.newFixedThreadPool(cores)) {
                List<java.util.concurrent.Future<?>> runs = java.util.stream.IntStream.range(0, cores)
                        .<java.util.concurrent.Future<?>>mapToObj(i -> runners.submit(runner)).toList();
                for (java.util.concurrent.Future<?> each : runs) {
                    each.get();
                }
            } catch (java.util.concurrent.ExecutionException e) {
                throw new IllegalStateException("a simulation run failed", e.getCause());
            }
            return outcomes;
        });
    }

    /** What runs simulations, on any number of threads: their production classes' log silent meanwhile. */
    public interface Runs<T> {
        T run() throws InterruptedException;
    }

    /**
     * Runs {@code runs} with the production classes' log silent. Runs on several threads are to be wrapped in one call,
     * made before they start: each run silences it again, and a level restored by one would be another's to restore.
     */
    public static <T> T quietly(Runs<T> runs) {
        java.util.logging.Level before = GATE_LOG.getLevel();
        GATE_LOG.setLevel(java.util.logging.Level.OFF);
        try {
            return runs.run();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while simulating", e);
        } finally {
            GATE_LOG.setLevel(before);
        }
    }

    Outcome run(long maxSteps) {
        log(null, "a run: " + (config.lease() ? "lease" : "file") + " election, " + config.pods() + " pods on " + config.nodes()
                + " node(s), " + seconds(config.chaosNanos()) + " of chaos, " + (config.meanFaultNanos() == 0
                        ? "the adversary's faults alone" : "a neighbour's fault every " + seconds(config.meanFaultNanos())
                        + " on average") + ", the switch directory " + (config.switchWritable() ? "writable" : "read-only")
                + " in lilbee's container, each node's clock within " + config.skew() * 100 + " % of the true rate"
                + (config.mutations().isEmpty() ? "" : ", mutated: " + config.mutations()));
        for (int i = 0; i < config.pods(); i++) {
            newPod(i % config.nodes());
        }
        long end = now + config.chaosNanos() + config.quietNanos();
        at(config.chaosNanos(), null, "the chaos ends", this::quiet);
        at(config.chaosNanos() + config.quietNanos() - STEADY, null, "steady from here", this::steady);
        SimAdversary adversary = new SimAdversary(this);
        adversary.next();
        adversary.freezes();
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
            if (!event.look) {
                steps++;
            }
            event.action.run();
            check();
        }
        if (violation == null && steps < maxSteps) {
            ready();
        }
        return new Outcome(steps, Optional.ofNullable(violation), List.copyOf(trace), longestUnserved);
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
        served();
    }

    /**
     * Liveness, through the quiet, ten times a second: once a pod could serve (its warden up, its supervisor believing
     * it) and no neighbour holds a lock, one does within {@link #recoveryBound}.
     */
    private void served() {
        boolean serving = pods.stream().anyMatch(SimPod::serving);
        // A lock anyone who can read the file may take: while a neighbour holds one, nothing can be promised.
        if (serving || pods.stream().noneMatch(SimPod::ready) || kernel.aNeighbourLocks(Set.of(GATE, SERVER))) {
            if (unservedSince >= 0) {
                log(null, (serving ? "served again " : "no pod could serve, or a neighbour locks, ")
                        + seconds(now - unservedSince) + " after one could");
            }
            unservedSince = -1;
        } else if (unservedSince < 0) {
            unservedSince = now;
            log(null, "unserved, while a pod could serve");
        } else {
            longestUnserved = Math.max(longestUnserved, now - unservedSince);
            if (now - unservedSince > recoveryBound(config.timings())) {
                fail("no pod serves " + seconds(now - unservedSince) + " after one could (the bound: "
                        + seconds(recoveryBound(config.timings())) + "): " + pods.stream().map(SimPod::describe).toList());
                return;
            }
        }
        queue.add(new Event(now + 100 * MS, seq++, null, "served?", this::served, true));
    }

    /**
     * How soon, once faults stop, a pod could serve and no neighbour holds a lock, one must, the worst delays one after
     * another: a lilbee of the elected pod holding a server.lock no longer at the path (renamed under it) is stopped
     * only once a start would be over ({@link GateTimings#LILBEE_START_BOUND}); a lilbee outlives its warden by its
     * permit and overrun; an elected pod that cannot serve hands over after handoverAfter; the next waits out what its
     * election asks (the settle of a gate file new to it, then the Lease's duration and a jittered retry, up to 2.2
     * retry periods); then its lilbee starts (here within 4 s, a supervisor's reconnection and a few rounds with it:
     * 5 s). All by the slowest clock: 1 % more.
     */
    static long recoveryBound(GateTimings timings) {
        java.time.Duration lease = timings.lease().map(l -> l.duration().plus(l.retryPeriod().multipliedBy(22).dividedBy(10)))
                .orElse(java.time.Duration.ZERO);
        long bound = GateTimings.LILBEE_START_BOUND.plus(timings.permit()).plus(timings.overrun()).plus(timings.handoverAfter())
                .plus(timings.settle()).plus(lease).plusSeconds(5).toNanos();
        return (long) (bound * (1 + MAX_SKEW));
    }

    /**
     * The invariant, after every step: at most one lilbee serves (took a server.lock, and has not let it go itself:
     * a lock unlocked under it by a process that took its descriptor leaves it serving).
     */
    private void check() {
        if (violation != null) {
            return;
        }
        List<SimLilbee> serving = lilbees.stream().filter(SimLilbee::serves).toList();
        if (serving.size() > 1) {
            fail("two lilbees serve on a server.lock: " + serving);
        }
    }

    /** Through the end of the quiet, once a second: exactly one pod serves, its lilbee on the server.lock at the path. */
    private void steady() {
        List<SimPod> serving = pods.stream().filter(SimPod::serving).toList();
        if (serving.size() != 1) {
            fail(serving.size() + " pods serve " + seconds(now - chaosEnd()) + " after the last fault (one must, steadily): "
                    + pods.stream().map(SimPod::describe).toList());
            return;
        }
        at(SECOND, null, "steady", this::steady);
    }

    private long chaosEnd() {
        return startedAt + config.chaosNanos();
    }

    /** At the end: every pod left could serve if asked (its supervisor believes its warden). */
    private void ready() {
        List<SimPod> unready = pods.stream().filter(p -> !p.deleted && !p.ready()).toList();
        if (!unready.isEmpty()) {
            fail("pods that cannot serve " + seconds(config.quietNanos()) + " after the last fault: "
                    + unready.stream().map(SimPod::describe).toList());
        }
    }

    void fail(String what) {
        if (violation == null) {
            log(null, "VIOLATION: " + what);
            violation = new Violation(what, seed, steps, now, List.copyOf(trace));
        }
    }

    /**
     * Schedules {@code action} in {@code delay}: by its owner's node's clock, or the simulation's where it has none. An
     * owner's events wait while it is stopped and end with it.
     */
    void at(long delay, Kernel.Proc owner, String what, Runnable action) {
        queue.add(new Event(now + (owner == null ? Math.max(0, delay) : real(owner.node, delay)), seq++, owner, what, action));
    }

    /** Schedules {@code action} in {@code delay} by node {@code node}'s clock (its kubelet's probes). */
    void atOn(int node, long delay, String what, Runnable action) {
        queue.add(new Event(now + real(node, delay), seq++, null, what, action));
    }

    /** How long {@code delay} of node {@code node}'s clock lasts in the simulation's time. */
    private long real(int node, long delay) {
        return (long) Math.ceil(Math.max(0, delay) / rate[node]);
    }

    /** SIGSTOP: the process runs nothing until SIGCONT. */
    void stop(Kernel.Proc proc) {
        if (proc.alive && !proc.stopped) {
            proc.stopped = true;
            log(proc, "SIGSTOP");
        }
    }

    /** Node {@code node} is frozen until {@code until}: no process on it runs, a SIGCONT included, until then. */
    void freeze(int node, long until) {
        frozenUntil.merge(node, until, Math::max);
    }

    /** SIGCONT: what it would have run meanwhile runs now, in order; on a frozen node, once it thaws. */
    void resume(Kernel.Proc proc) {
        long thaw = frozenUntil.getOrDefault(proc.node, 0L);
        if (now < thaw) {
            at(thaw - now, null, "SIGCONT once the node thaws", () -> resume(proc));
            return;
        }
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

    long now() {
        return now;
    }

    /** Node {@code node}'s monotonic clock: its processes' time, which runs at the node's rate. */
    long clock(int node) {
        return startedAt + (long) ((now - startedAt) * rate[node]);
    }

    Moment moment(int node) {
        return new Moment(clock(node));
    }

    Instant wall(int node) {
        return Instant.ofEpochSecond(0, clock(node) + wallOffset[node]);
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
