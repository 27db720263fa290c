package dev.warden.gate.pod;

import dev.warden.config.LilbeePaths;
import dev.warden.gate.GateAction.Word;
import dev.warden.gate.GateElection;
import dev.warden.gate.GateTimings;
import dev.warden.gate.GateWorld;
import dev.warden.gate.Observation;
import dev.warden.lock.FileId;
import dev.warden.lock.FileLocker;
import dev.warden.lock.LockException;
import dev.warden.lock.Posix;
import dev.warden.time.Moment;
import dev.warden.time.MonotonicClock;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.function.Supplier;
import org.jboss.logging.Logger;

/**
 * The pod as one warden's gate reaches it: its gate lock, the Lease, the two lock files, lilbee's supervisor on the
 * switch socket, and the proof of lilbee; every primitive through the kernel it was given ({@link Posix},
 * {@link dev.warden.lock.ProcFs}). The gate keeper gives it this machine's, the simulation one of its own: the same
 * class either way.
 */
public final class PodGate implements GateWorld {

    private static final Logger LOG = Logger.getLogger(PodGate.class);

    private final Posix posix;
    private final FileLocker locker;
    private final LilbeePaths paths;
    private final LilbeeSwitch lilbeeSwitch;
    private final GateLock gate;
    private final LilbeeProof proof;
    private final MonotonicClock clock;
    private final Supplier<GateElection> lease;
    private final StepDowns stepDowns;
    private final Duration overrun;
    /**
     * The latest end of a permit this warden's previous run (a restart in place) may have given: one permit from this
     * run's start. No supervisor connected now can say it is done with it: a neighbour may have said hello first.
     */
    private final Moment previousRunsPermitsEnd;
    /** When a step-down the supervisor asked for was last taken: at most one a handover period. */
    private Moment supervisorStepDown;

    /**
     * Where step-downs are asked for (an operator's, by any thread) and how often lilbee's supervisor may ask for one:
     * once per connection (it says so when SIGTERMed, terminating) and at most once per {@code every}.
     */
    public interface StepDowns {

        /** When this warden was last asked to step down, if ever. */
        Optional<Moment> asked();

        /** Asks this warden to step down, at {@code at}. */
        void ask(Moment at);

        /** The least time between two step-downs a supervisor asks for. */
        Duration every();
    }

    public PodGate(Posix posix, FileLocker locker, LilbeePaths paths, LilbeeSwitch lilbeeSwitch, GateLock gate,
            LilbeeProof proof, MonotonicClock clock, Supplier<GateElection> lease, StepDowns stepDowns, GateTimings timings) {
        this.posix = posix;
        this.locker = locker;
        this.paths = paths;
        this.lilbeeSwitch = lilbeeSwitch;
        this.gate = gate;
        this.proof = proof;
        this.clock = clock;
        this.lease = lease;
        this.stepDowns = stepDowns;
        this.overrun = timings.overrun();
        this.previousRunsPermitsEnd = clock.now().plus(timings.permit());
    }

    public LilbeeSwitch lilbeeSwitch() {
        return lilbeeSwitch;
    }

    public GateLock gateLock() {
        return gate;
    }

    @Override
    public Moment now() {
        return clock.now();
    }

    @Override
    public void hearSupervisor() {
        Moment now = now();
        lilbeeSwitch.poll(now);
        lilbeeSwitch.takeOfferedGate().ifPresent(gate::adopt);
        OptionalLong asked = lilbeeSwitch.takeStepDown();
        if (asked.isEmpty()) {
            return;
        }
        if (supervisorStepDown != null && now.since(supervisorStepDown).compareTo(stepDowns.every()) < 0) {
            LOG.warnf("lilbee's supervisor (pid %d) asked this warden to step down %d ms after the last it asked: not"
                    + " taken (one a handover period, %d s)", asked.getAsLong(), now.since(supervisorStepDown).toMillis(),
                    stepDowns.every().toSeconds());
            return;
        }
        supervisorStepDown = now;
        LOG.infof("lilbee's supervisor (pid %d) was told to stop (its pod or its container is going away): stepping down",
                asked.getAsLong());
        stepDowns.ask(now);
    }

    @Override
    public Observation.Gate gate() {
        return gate.look();
    }

    @Override
    public Optional<Observation.Lease> lease() {
        GateElection election = lease.get();
        return Optional.ofNullable(election).map(GateElection::look);
    }

    @Override
    public Optional<FileId> gateAtPath() {
        return idOf(paths.gateLock());
    }

    @Override
    public Optional<FileId> serverAtPath() {
        return idOf(paths.serverLock());
    }

    /** The file at {@code path} (device and inode), a link not followed; empty when there is none. */
    Optional<FileId> idOf(Path path) {
        try {
            return Optional.of(posix.statAt(Posix.AT_FDCWD, path.toString()).id());
        } catch (Posix.ErrnoException e) {
            return Optional.empty();
        }
    }

    @Override
    public Observation.Server probeServer(Optional<FileId> atPath) {
        try {
            return new Observation.Server(atPath, Optional.of(locker.probe(paths.serverLock())), Optional.empty());
        } catch (LockException e) {
            return new Observation.Server(atPath, Optional.empty(), Optional.of(e.getMessage()));
        }
    }

    @Override
    public boolean supervisorConnected() {
        return lilbeeSwitch.connected();
    }

    @Override
    public Optional<Moment> supervisorPermit() {
        return lilbeeSwitch.report().flatMap(SupervisorReport::permit);
    }

    /**
     * Whether the last stop is done on the word of the supervisor it was said to, and no permit it cannot speak for may
     * still be used: one this warden's previous run gave, or one said to a supervisor gone since without answering
     * (only the process a permit went to can use it, and only it can say it is done).
     */
    @Override
    public boolean supervisorStopDone() {
        Moment unanswered = lilbeeSwitch.permitsOfTheGone().filter(previousRunsPermitsEnd::isBefore).orElse(previousRunsPermitsEnd);
        return lilbeeSwitch.stopDone() && !now().isBefore(unanswered.plus(overrun));
    }

    @Override
    public Optional<FileId> supervisorGate() {
        return lilbeeSwitch.report().flatMap(SupervisorReport::gate);
    }

    @Override
    public Optional<Moment> stepDownAsked() {
        return stepDowns.asked();
    }

    /** The instance the supervisor names, alive, and its own: a stranger's pid in a report proves nothing. */
    @Override
    public Optional<Reported> reportedLilbee() {
        OptionalLong supervisor = lilbeeSwitch.supervisorPid();
        return lilbeeSwitch.report().flatMap(SupervisorReport::lilbee)
                .filter(running -> supervisor.isPresent() && proof.startedBy(running.pid(), supervisor.getAsLong()))
                .filter(running -> proof.alive(running.pid(), running.startTicks()))
                .map(running -> new Reported(running.pid(), running.startTicks(), running.launched()));
    }

    @Override
    public GateWorld.Holding holds(Reported lilbee, Set<FileId> wanted) {
        return proof.look(lilbee.pid(), lilbee.startTicks(), wanted);
    }

    @Override
    public void contend() {
        gate.contend(now());
    }

    @Override
    public void releaseGate() {
        gate.release();
    }

    @Override
    public void retireGate() {
        gate.retire();
    }

    @Override
    public void unlockGate() {
        gate.unlock();
    }

    @Override
    public void stepAside() {
        GateElection election = lease.get();
        if (election != null) {
            election.stepAside();
        }
    }

    @Override
    public void say(Word word) {
        lilbeeSwitch.say(word, now(), gate.descriptor());
    }

    /** Stops: the supervisor is told to stop lilbee, and the gate lock is let go (a lilbee holding it keeps it). */
    public void stop() {
        lilbeeSwitch.say(new Word.Stop("warden stops"), now(), gate.descriptor());
        gate.close();
    }
}
