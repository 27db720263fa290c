package dev.warden.gate.pod;

import dev.warden.config.LilbeePaths;
import dev.warden.config.WardenConfig;
import dev.warden.events.PodEvent;
import dev.warden.gate.GateAction.Word;
import dev.warden.gate.GateDecision.Step;
import dev.warden.gate.GateDecision;
import dev.warden.gate.GateElection;
import dev.warden.gate.GateEvents;
import dev.warden.gate.GatePhase;
import dev.warden.gate.GateRound;
import dev.warden.gate.GateSnapshot;
import dev.warden.gate.GateState;
import dev.warden.gate.GateTimings;
import dev.warden.gate.Observation;
import dev.warden.keeper.KeeperPhase;
import dev.warden.keeper.KeeperLoop;
import dev.warden.lock.FileLocker;
import dev.warden.lock.LockReach;
import dev.warden.lock.Posix;
import dev.warden.lock.ProcFs;
import dev.warden.lock.ProcLocks;
import dev.warden.time.Moment;
import dev.warden.time.MonotonicClock;
import io.quarkus.runtime.ShutdownEvent;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import org.jboss.logging.Logger;

/**
 * Gate mode: elects one pod per data dir through {@code <data dir>/warden-gate.lock} (a flock waited for in the
 * kernel, and in lease mode a Kubernetes Lease as well) and tells that pod's lilbee supervisor, over the switch
 * socket, when lilbee may run. Each round observes the world once, lets {@link GateDecision} decide, and acts on
 * what it returns; the decision, not this class, is where the gate's rules live.
 */
@Singleton
public class GateKeeper {

    private static final Logger LOG = Logger.getLogger(GateKeeper.class);
    /**
     * How long a stopping warden waits for its lilbee to be gone before it lets its Lease go (lilbee drains its requests
     * within the supervisor's grace); past it the Lease is left to expire.
     */
    private static final Duration LEASE_RELEASE_WAIT = Duration.ofSeconds(4);
    /** How often a standby asks the node's lock table who holds the gate, for the status alone. */
    private static final Duration HOLDER_LOOK = Duration.ofSeconds(1);

    private final Edges edges;
    private final GateRound rounds;
    private final KeeperLoop loop;
    private final AtomicReference<GateSnapshot> published = new AtomicReference<>(GateSnapshot.notStarted());
    private final List<Consumer<LilbeePaths>> startListeners = new CopyOnWriteArrayList<>();
    private final List<Consumer<PodEvent>> eventListeners = new CopyOnWriteArrayList<>();
    /** Lease mode's election, null in file mode; set before the keeper runs, read by the liveness probe too. */
    private volatile GateElection lease;
    /** When this warden was last asked to step down, by its API or CLI (any thread) or its supervisor. */
    private final AtomicReference<Moment> stepDownAsked = new AtomicReference<>();
    private final GateTimings timings;
    /** How often a gate lock held vanished under this warden: for the metric. */
    private final LongAdder lostGateLocks = new LongAdder();
    /** The gate lock's heartbeat where a file lock elects, for the metric. */
    private volatile Optional<LockReach> reach = Optional.empty();
    /** Confined to the keeper thread once it runs (handed over by Thread.start). */
    private Round round;

    /**
     * What the keeper reaches the world through: the lock primitives, the kernel's view of processes (for the proof of
     * lilbee and of its own gate lock), the two clocks (monotonic for every decision, the wall only for what the status
     * shows), and the switch socket's path and owner.
     */
    public record Edges(FileLocker locker, Posix posix, ProcFs procs, ProcLocks procLocks, MonotonicClock clock,
            InstantSource wall, Path socket, int uid, Duration pollInterval, Duration errorRetry, LockReach.Factory reaches) {
    }

    /** Everything one run of the keeper holds, on its thread: the pod as its gate sees it, and where it stands. */
    private static final class Round {
        final LilbeePaths paths;
        final PodGate world;
        /** The wall clock's reading at the monotonic clock's zero, as of the start: for the status's times. */
        final long wallOffsetNanos;
        GatePhase phase;
        Step last;
        OptionalLong gateHolder = OptionalLong.empty();
        Moment holderLookedAt;

        Round(LilbeePaths paths, PodGate world, long wallOffsetNanos, GatePhase phase) {
            this.paths = paths;
            this.world = world;
            this.wallOffsetNanos = wallOffsetNanos;
            this.phase = phase;
        }
    }

    @Inject
    public GateKeeper(FileLocker locker, Posix posix, ProcFs procs, ProcLocks procLocks, InstantSource wall,
            WardenConfig config, LockReach.Factory reaches) {
        this(new Edges(locker, posix, procs, procLocks, MonotonicClock.SYSTEM, wall, config.gate().supervisor().socket(),
                config.gate().supervisor().uid().orElseGet(() -> Integer.parseInt(FileLocker.currentUid())),
                config.lock().pollInterval(), config.lock().errorRetry(), reaches), GateTimings.of(config.gate()));
    }

    public GateKeeper(Edges edges, GateTimings timings) {
        this.edges = edges;
        this.timings = timings;
        this.rounds = new GateRound(new GateDecision(timings));
        this.loop = new KeeperLoop("gate keeper", edges.pollInterval(), LEASE_RELEASE_WAIT.plusSeconds(1));
    }

    /** Starts contending for the gate of {@code lilbeePaths}'s data dir until {@link #stop()}. */
    public void start(LilbeePaths lilbeePaths) throws IOException {
        start(lilbeePaths, null);
    }

    /**
     * Starts the keeper: the switch socket listens at once (lilbee's supervisor connects and waits for a word), and
     * the gate is contended for, in lease mode only while {@code election} is won. The election is closed (the Lease
     * released) when the keeper stops.
     *
     * @throws IOException the switch socket cannot listen: the message names the path and the fix
     */
    public synchronized void start(LilbeePaths lilbeePaths, GateElection election) throws IOException {
        if (round != null) {
            throw new IllegalStateException("the gate keeper is already running");
        }
        LilbeePaths paths;
        try {
            paths = lilbeePaths.created();
        } catch (RuntimeException e) {
            // Reported per round and retried: the volume may be mounted later.
            LOG.warn(e.getMessage());
            paths = lilbeePaths.canonical();
        }
        LilbeeSwitch lilbeeSwitch = LilbeeSwitch.open(edges.posix(), edges.procs(), edges.socket(), edges.uid());
        lease = election;
        Moment now = edges.clock().now();
        long wallOffset = edges.wall().instant().getEpochSecond() * 1_000_000_000L + edges.wall().instant().getNano() - now.nanos();
        // A lilbee outlives its warden's last round by its permit and the overrun: a holder silent for less may still serve.
        reach = Optional.ofNullable(election == null ? edges.reaches().of(paths.gateLock(), timings.permit().plus(timings.overrun()))
                : null);
        reach.ifPresent(r -> r.onChange(verdict -> PodEvent.ofReach(verdict).ifPresent(event -> eventListeners.forEach(
                listener -> listener.accept(event)))));
        PodGate world = new PodGate(edges.posix(), edges.locker(), paths, lilbeeSwitch, new GateLock(edges.locker(),
                edges.procs(), paths.gateLock(), edges.errorRetry(), reach), new LilbeeProof(edges.procs(), edges.clock()),
                edges.clock(), () -> lease, stepDowns(), timings);
        round = new Round(paths, world, wallOffset, GatePhase.begin(world.gateAtPath(), now, timings.permit()));
        publish(round, null, KeeperPhase.RUNNING);
        LilbeePaths started = paths;
        startListeners.forEach(listener -> listener.accept(started));
        LOG.infof("lilbee's supervisor is told when lilbee may run over %s", lilbeeSwitch.path());
        Round mine = round;
        loop.start(() -> turn(mine), () -> mine.world.gateLock().pending(), () -> finish(mine));
    }

    /** Step-downs asked of this warden: by its API or CLI (any thread), or by its supervisor at most one a handover period. */
    private PodGate.StepDowns stepDowns() {
        return new PodGate.StepDowns() {
            @Override
            public Optional<Moment> asked() {
                return Optional.ofNullable(stepDownAsked.get());
            }

            @Override
            public void ask(Moment at) {
                askStepDown(at);
            }

            @Override
            public Duration every() {
                return timings.handoverAfter();
            }
        };
    }


    /** Whether another pod holds the gate lock too, through a mount whose locks do not reach this one (file election). */
    public boolean gateLockShared() {
        return reach.map(LockReach::shared).orElse(false);
    }

    /** {@code listener} hears the Events each round makes (GateEvents), on the keeper's thread: it must not wait. */
    public void onEvent(Consumer<PodEvent> listener) {
        eventListeners.add(listener);
    }

    /** Calls {@code listener} with the paths watched when gate mode starts, so the metrics have gate series only in gate mode. */
    public void onStart(Consumer<LilbeePaths> listener) {
        startListeners.add(listener);
    }

    /**
     * Whether warden can see its pod's other containers' processes, its lilbee's among them: not when it is PID 1
     * of a PID namespace of its own (a pod without {@code shareProcessNamespace}), where it can never report ready.
     */
    public static boolean seesPodProcesses() {
        return ProcessHandle.current().pid() != 1;
    }

    /** Lets go of the gate, promptly. Safe to call twice. */
    public void stop() {
        loop.stop();
    }

    void onShutdown(@Observes ShutdownEvent event) {
        stop();
    }

    /** What a step-down request came to. */
    public sealed interface StepDown {

        /** This warden no longer serves: its lilbee stops and the gate goes to a standby. */
        record SteppedDown(String reason) implements StepDown {
        }

        /** Asked, and not done within the wait (lease mode: the Lease goes once lilbee has stopped). */
        record Stepping(String reason) implements StepDown {
        }

        /** This warden is not elected: there is nothing to hand over. */
        record NotElected(String reason) implements StepDown {
        }
    }

    /**
     * Hands the gate to a standby on purpose (a switchover): if this warden is elected, its lilbee is told to stop and
     * the gate goes (GateDecision's step-down), and this waits up to {@code wait} until it no longer is.
     */
    public StepDown stepDown(Duration wait) throws InterruptedException {
        GateSnapshot before = snapshot();
        if (!(before.gate() instanceof GateState.Elected)) {
            return new StepDown.NotElected(before.note().orElse("the gate keeper has not started"));
        }
        Moment asked = edges.clock().now();
        askStepDown(asked);
        Moment deadline = asked.plus(wait);
        while (true) {
            GateSnapshot now = snapshot();
            if (!(now.gate() instanceof GateState.Elected)) {
                return new StepDown.SteppedDown(now.note().orElse("stepped down"));
            }
            if (!edges.clock().now().isBefore(deadline)) {
                return new StepDown.Stepping(now.note().orElse("stepping down"));
            }
            Thread.sleep(10);
        }
    }

    private void askStepDown(Moment at) {
        stepDownAsked.accumulateAndGet(at, (last, asked) -> last == null || last.isBefore(asked) ? asked : last);
    }

    public GateSnapshot snapshot() {
        return published.get();
    }

    /** How many times a gate lock this warden held vanished under it, since it started. */
    public long lostGateLocks() {
        return lostGateLocks.sum();
    }

    /** The paths being watched, canonicalised; empty unless this warden serves in gate mode. */
    public Optional<LilbeePaths> paths() {
        GateSnapshot snapshot = published.get();
        return snapshot.phase() == KeeperPhase.NOT_STARTED ? Optional.empty() : Optional.ofNullable(snapshot.paths());
    }

    /**
     * Whether the keeper's own machinery works (see {@link KeeperLoop#health}), and in lease mode its election
     * too, for the liveness probe: a warden that stopped contending would never be elected again.
     */
    public KeeperLoop.KeeperHealth health(Duration stallTimeout) {
        KeeperLoop.KeeperHealth health = loop.health(stallTimeout);
        GateElection contending = lease;
        Optional<Duration> stalled = contending == null || !health.alive() ? Optional.empty()
                : contending.stalled(stallTimeout);
        return stalled.map(silent -> new KeeperLoop.KeeperHealth(false, health.sinceLastRound(), "the election for "
                + contending.name() + " has not asked the API server anything for " + silent.toMillis()
                + " ms: it has stopped contending, and only a restart lets this warden contend again")).orElse(health);
    }

    private void turn(Round r) {
        GateRound.Result result = rounds.turn(r.world, r.phase);
        Step step = result.step();
        r.phase = step.phase();
        if (result.seen().gate() instanceof Observation.Gate.Lost) {
            lostGateLocks.increment();
            LOG.errorf("The gate lock on %s vanished while this warden held it: a flock(LOCK_UN) through a descriptor of its"
                    + " open file (this pod's lilbee holds one; a process of its UID may have taken another from it). Not"
                    + " held from here: this pod's lilbee is stopped, and another pod may be elected already", r.paths.gateLock());
            PodEvent event = PodEvent.warning("GateLockLost", "the gate lock on " + r.paths.gateLock() + " vanished while"
                    + " this warden held it: this pod's lilbee is stopped");
            eventListeners.forEach(listener -> listener.accept(event));
        }
        for (PodEvent event : GateEvents.between(Optional.ofNullable(r.last), step)) {
            eventListeners.forEach(listener -> listener.accept(event));
        }
        if (step.isNewsAfter(r.last)) {
            if (step.warns()) {
                LOG.warn(step.reason());
            } else {
                LOG.info(step.reason());
            }
        }
        r.last = step;
        publish(r, result.seen(), KeeperPhase.RUNNING);
    }

    /**
     * The keeper stops: lilbee's supervisor is told to stop lilbee, the gate lock is let go (a lilbee still holding it
     * keeps it until it is gone), and in lease mode the Lease is released once the supervisor says its lilbee is gone
     * and it holds no permit, or once every permit given has run out; a warden that must exit sooner leaves the Lease to
     * expire.
     */
    private void finish(Round r) {
        r.world.stop();
        if (lease != null) {
            boolean letGo = awaitStopDone(r);
            if (!letGo) {
                LOG.infof("Not releasing the Lease %s: a permit this warden gave may still keep its lilbee; the Lease passes"
                        + " once it expires", lease.name());
            }
            lease.close(letGo);
        }
        r.world.lilbeeSwitch().close();
        publish(r, null, KeeperPhase.STOPPED);
        LOG.info("The gate keeper has stopped");
    }

    /** Until the supervisor says the stop is done, or no permit given can be used any more, or {@link #LEASE_RELEASE_WAIT}. */
    private boolean awaitStopDone(Round r) {
        Moment deadline = edges.clock().now().plus(LEASE_RELEASE_WAIT);
        while (true) {
            Moment now = edges.clock().now();
            LilbeeSwitch lilbeeSwitch = r.world.lilbeeSwitch();
            lilbeeSwitch.poll(now);
            if (r.world.supervisorStopDone() || rounds.decision().mayLetTheLeaseGo(r.phase, now)) {
                return true;
            }
            if (!now.isBefore(deadline)) {
                return false;
            }
            lilbeeSwitch.say(new Word.Stop("warden stops"), now, java.util.OptionalInt.empty());
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
    }

    private void publish(Round r, Observation seen, KeeperPhase phase) {
        GateSnapshot next = GateSnapshot.of(phase, r.paths, r.phase, Optional.ofNullable(r.last), Optional.ofNullable(seen),
                gateHolder(r), moment -> Instant.ofEpochSecond(0, r.wallOffsetNanos + moment.nanos()),
                Optional.ofNullable(lease).map(l -> leaseView(l, seen)),
                r.world.lilbeeSwitch().report().map(SupervisorReport::warm).orElse(OptionalLong.empty()));
        if (!next.equals(published.get())) {
            published.set(next);
        }
    }

    /** The Lease as this round saw it, or once more when there was no round (stopped). */
    private GateSnapshot.LeaseView leaseView(GateElection election, Observation seen) {
        Observation.Lease look = Optional.ofNullable(seen).flatMap(Observation::lease).orElseGet(election::look);
        return new GateSnapshot.LeaseView(look.name(), election.identity(), look.leading(edges.clock().now()), look.holder(),
                look.renewed());
    }

    /** Who holds the gate, as the node's lock table says, looked at once a second while this warden stands by. */
    private OptionalLong gateHolder(Round r) {
        if (!(r.phase instanceof GatePhase.Standby)) {
            return OptionalLong.empty();
        }
        Moment now = edges.clock().now();
        if (r.holderLookedAt == null || now.since(r.holderLookedAt).compareTo(HOLDER_LOOK) >= 0) {
            r.holderLookedAt = now;
            r.gateHolder = edges.procLocks().holderOf(r.paths.gateLock());
        }
        return r.gateHolder;
    }
}
