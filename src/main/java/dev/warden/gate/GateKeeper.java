package dev.warden.gate;

import dev.warden.config.LilbeePaths;
import dev.warden.config.WardenConfig;
import dev.warden.hold.HoldSnapshot.Phase;
import dev.warden.hold.KeeperLoop;
import dev.warden.lock.FileId;
import dev.warden.lock.FileLocker;
import dev.warden.lock.HeldLock;
import dev.warden.lock.LockException;
import dev.warden.lock.LockProbe;
import dev.warden.lock.ProcLocks;
import io.quarkus.runtime.ShutdownEvent;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.jboss.logging.Logger;

/**
 * Gate mode: elects one pod per data dir through {@code <data dir>/warden-gate.lock}, a flock
 * waited for in the kernel, and says when that pod's {@code lilbee serve} may start. warden never
 * takes lilbee's {@code server.lock} here; it watches it in the kernel's lock table, which from
 * inside a PID namespace lists only the locks whose holders that namespace can see: a holder that
 * is listed is in this pod ({@code shareProcessNamespace: true}).
 *
 * <ul>
 *   <li>Started (sticky) once this warden holds the gate and {@code server.lock} is free or held in
 *       this pod; or at once when this pod's lilbee already holds it (warden restarted beside it).
 *   <li>Serving (readiness) while a process of this pod other than warden holds {@code server.lock}.
 *   <li>A warden that wins the gate but finds {@code server.lock} held outside the pod lets the gate
 *       go and waits in the kernel for that release before it contends again: the serving pod's
 *       restarted warden gets the gate back, so the serving pod keeps it when its lilbee restarts.
 * </ul>
 */
@Singleton
public class GateKeeper {

    private static final Logger LOG = Logger.getLogger(GateKeeper.class);

    /**
     * How often an elected warden whose lilbee does not hold {@code server.lock} looks closer (a
     * take-and-let-go that a starting lilbee would see refused once), and how often a standby asks
     * who holds the gate.
     */
    private static final Duration LOOK_CLOSER = Duration.ofSeconds(1);
    /** How long a started pod's lock may stay held where warden cannot see it before the log says why that may be. */
    private static final Duration INVISIBLE_HINT = Duration.ofSeconds(30);

    private final FileLocker locker;
    private final ProcLocks procLocks;
    private final InstantSource clock;
    private final KeeperLoop loop;
    private final Duration errorRetry;
    private final long pid = ProcessHandle.current().pid();
    private final AtomicReference<GateSnapshot> published = new AtomicReference<>(GateSnapshot.notStarted());
    private final List<Runnable> startListeners = new CopyOnWriteArrayList<>();
    private boolean running;
    /**
     * Lease mode: the gate is contended for only while this election is won; null in file mode. Set
     * before the keeper runs; the liveness probe's threads read it too.
     */
    private volatile GateElection lease;

    // Confined to the keeper thread once it runs (handed over by Thread.start).
    private LilbeePaths paths;
    private LilbeeFence fence;
    /** Lease mode on a volume whose gate lock cannot be taken at all: the Lease alone elects. */
    private boolean leaseAlone;
    private HeldLock gate;
    private CompletableFuture<HeldLock> gateWait;
    private CompletableFuture<Void> releaseWait;
    private GateState gateState = new GateState.Waiting("not tried yet");
    private ServerLockState server = new ServerLockState.NotInPod();
    private boolean started;
    private Optional<String> note = Optional.empty();
    /** The file this pod's lilbee was last seen holding: it keeps it after a reset unlinks the path. */
    private FileId servedFile;
    private Instant retryAt;
    private Instant lookedCloserAt = Instant.EPOCH;
    private Instant standbyLookAt = Instant.EPOCH;
    private boolean hinted;

    @Inject
    public GateKeeper(FileLocker locker, ProcLocks procLocks, InstantSource clock, WardenConfig config) {
        this(locker, procLocks, clock, config.lock().pollInterval(), config.lock().errorRetry());
    }

    public GateKeeper(FileLocker locker, ProcLocks procLocks, InstantSource clock, Duration pollInterval,
            Duration errorRetry) {
        this.locker = locker;
        this.procLocks = procLocks;
        this.clock = clock;
        this.errorRetry = errorRetry;
        this.loop = new KeeperLoop("gate keeper", pollInterval);
    }

    /** Starts contending for the gate of {@code lilbeePaths}'s data dir until {@link #stop()}. */
    public void start(LilbeePaths lilbeePaths) {
        start(lilbeePaths, null, null);
    }

    /**
     * Lease mode: the gate lock is contended for only while {@code election} is won. A warden that does not
     * hold the Lease is never started, lets the gate lock go, and has {@code fence} stop any lilbee of
     * its pod that holds server.lock. The election is closed (the Lease released) when the keeper stops.
     */
    public synchronized void start(LilbeePaths lilbeePaths, GateElection election, LilbeeFence lilbeeFence) {
        lease = election;
        fence = lilbeeFence;
        if (running) {
            throw new IllegalStateException("the gate keeper is already running");
        }
        running = true;
        LilbeePaths prepared;
        try {
            prepared = lilbeePaths.created();
        } catch (RuntimeException e) {
            // Reported per round and retried: the volume may be mounted later.
            LOG.warn(e.getMessage());
            prepared = lilbeePaths.canonical();
        }
        paths = prepared;
        publish(Phase.RUNNING);
        startListeners.forEach(Runnable::run);
        loop.start(this::round, this::pendingWait, this::finish);
    }

    /** Calls {@code listener} when gate mode starts, so the metrics have gate series only in gate mode. */
    public void onStart(Runnable listener) {
        startListeners.add(listener);
    }

    /** Lets go of the gate, promptly. Safe to call twice. */
    public void stop() {
        loop.stop();
    }

    void onShutdown(@Observes ShutdownEvent event) {
        stop();
    }

    public GateSnapshot snapshot() {
        return published.get();
    }

    /** The paths being watched, canonicalised; empty unless this warden serves in gate mode. */
    public Optional<LilbeePaths> paths() {
        return Optional.ofNullable(published.get().phase() == Phase.NOT_STARTED ? null : paths);
    }

    /**
     * Whether the keeper's own machinery works (see {@link KeeperLoop#health}), and in lease mode its
     * election too, for the liveness probe: a warden that stopped contending would never be started again.
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

    private void round() {
        Instant now = clock.instant();
        try {
            lookInPod(now);
            if (lease != null && !lease.leading()) {
                outsideTheLease(now);
                return;
            }
            keepGate(now);
            if (gate != null || leaseAlone) {
                whileElected(now);
            } else if (!started && server instanceof ServerLockState.InPod inPod) {
                letLilbeeStart("this pod's lilbee (pid " + inPod.pid() + ") already holds " + paths.serverLock()
                        + ": warden restarted beside it");
            }
        } finally {
            publish(Phase.RUNNING);
        }
    }

    /**
     * Lease mode without the Lease: not started (at once, whatever was reported before), no gate lock (a
     * pod holding the Lease must be able to take it), and this pod's lilbee, if it serves, fenced.
     */
    private void outsideTheLease(Instant now) {
        leaseAlone = false;
        if (gateWait != null) {
            gateWait.cancel(false);
            gateWait = null;
        }
        if (gate != null) {
            gate.close();
            gate = null;
            LOG.infof("Released %s: this warden does not hold the Lease", paths.gateLock());
        }
        if (started) {
            started = false;
            LOG.warnf("Not started any more: this warden lost the Lease %s", lease.name());
        }
        if (!(gateState instanceof GateState.Standby)) {
            gateState = new GateState.Standby(now, OptionalLong.empty());
        }
        note = Optional.of("waiting for the Lease " + lease.name()
                + lease.holder().map(h -> " (held by " + h + ")").orElse(""));
        if (server instanceof ServerLockState.InPod inPod) {
            fence.fence(inPod.pid());
        }
    }

    /** Whether a process of this pod, other than warden, holds {@code server.lock}: one read of the lock table. */
    private void lookInPod(Instant now) {
        Optional<FileId> atPath = ProcLocks.idOf(paths.serverLock());
        OptionalLong holder = atPath.map(this::podHolderOf).orElse(OptionalLong.empty());
        boolean replaced = false;
        if (holder.isEmpty() && servedFile != null && !atPath.equals(Optional.of(servedFile))) {
            holder = podHolderOf(servedFile);
            replaced = holder.isPresent();
        } else if (holder.isPresent()) {
            servedFile = atPath.get();
        }
        if (holder.isEmpty()) {
            servedFile = null;
            if (server instanceof ServerLockState.InPod gone) {
                LOG.infof("This pod's lilbee (pid %d) no longer holds %s: not ready", gone.pid(), paths.serverLock());
                server = new ServerLockState.NotInPod();
            }
            return;
        }
        long pidNow = holder.getAsLong();
        if (server instanceof ServerLockState.InPod seen && seen.pid() == pidNow && seen.replacedFile() == replaced) {
            return;
        }
        server = new ServerLockState.InPod(pidNow, now, replaced);
        note = Optional.empty();
        hinted = false;
        LOG.infof(replaced ? "This pod's lilbee (pid %d) holds %s on a file since deleted or replaced (a lilbee reset"
                + " clears the data dir): still serving" : "This pod's lilbee (pid %d) holds %s: ready", pidNow,
                paths.serverLock());
    }

    private OptionalLong podHolderOf(FileId file) {
        OptionalLong holder = procLocks.holderOf(file);
        // warden's own take-and-let-go of a free lock shows for an instant; it is not a server.
        return holder.isPresent() && holder.getAsLong() == pid ? OptionalLong.empty() : holder;
    }

    /** Moves towards holding the gate without blocking; keeps it when its file is replaced. */
    private void keepGate(Instant now) {
        if (leaseAlone) {
            return;
        }
        if (gate != null) {
            if (!gate.stillAtPath()) {
                retake(now);
            }
            return;
        }
        if (releaseWait != null) {
            if (!releaseWait.isDone()) {
                return;
            }
            CompletableFuture<Void> done = releaseWait;
            releaseWait = null;
            try {
                done.join();
                LOG.infof("%s was released: contending for the gate again", paths.serverLock());
            } catch (CompletionException e) {
                LOG.warnf("Could not wait for %s (%s): contending for the gate again", paths.serverLock(),
                        e.getCause().getMessage());
            }
        }
        if (gateWait == null) {
            if (retryAt != null && now.isBefore(retryAt)) {
                return;
            }
            try {
                Optional<HeldLock> won = locker.tryLockCreatingDirs(paths.gateLock());
                if (won.isPresent()) {
                    elected(won.get(), now);
                    return;
                }
            } catch (LockException e) {
                if (lease != null) {
                    electedByTheLeaseAlone(now, e.getMessage());
                } else {
                    fail(now, e.getMessage());
                }
                return;
            }
            gateWait = locker.lockInBackground(paths.gateLock());
        }
        if (!gateWait.isDone()) {
            standBy(now);
            return;
        }
        CompletableFuture<HeldLock> done = gateWait;
        gateWait = null;
        try {
            elected(done.join(), now);
        } catch (CompletionException e) {
            fail(now, e.getCause().getMessage());
        }
    }

    /**
     * The gate's file was deleted or replaced while held (a {@code lilbee reset} clears the data dir).
     * The new file is taken before the old one is let go: a standby woken by that release could
     * otherwise win the new file and start a second lilbee while this pod's still serves.
     */
    private void retake(Instant now) {
        HeldLock old = gate;
        try {
            Optional<HeldLock> fresh = locker.tryLockCreatingDirs(paths.gateLock());
            if (fresh.isPresent()) {
                gate = fresh.get();
                old.close();
                LOG.warnf("%s was deleted or replaced while this warden held it: holding the new file", paths.gateLock());
                return;
            }
            old.close();
            gate = null;
            gateState = new GateState.Standby(now, procLocks.holderOf(paths.gateLock()));
            LOG.warnf("%s was deleted or replaced while this warden held it, and another warden took the new file"
                    + " first: standing by%s", paths.gateLock(), started ? " (this pod's lilbee keeps running)" : "");
        } catch (LockException e) {
            // Keep the old lock: it still keeps every standby waiting on it out.
            fail(now, e.getMessage());
        }
    }

    /**
     * Lease mode, and the gate lock cannot be taken at all (a filesystem without locks, say): the gate lock
     * only backs the Lease up where the volume can lock, so the Lease alone elects. Tried again after the
     * next loss of the Lease.
     */
    private void electedByTheLeaseAlone(Instant now, String why) {
        leaseAlone = true;
        retryAt = null;
        gateState = new GateState.Elected(now, Duration.ZERO);
        LOG.warnf("%s; in lease mode the Lease %s alone elects this warden", why, lease.name());
    }

    private void elected(HeldLock won, Instant now) {
        gate = won;
        retryAt = null;
        Duration waited = gateState instanceof GateState.Standby standby ? Duration.between(standby.since(), now)
                : Duration.ZERO;
        gateState = new GateState.Elected(now, waited);
        LOG.infof("Elected: holding %s%s", paths.gateLock(),
                waited.isZero() ? "" : " (stood by for " + waited.toMillis() + " ms)");
    }

    /** Decides, once elected, whether this pod's lilbee may start. */
    private void whileElected(Instant now) {
        if (started) {
            if (!(server instanceof ServerLockState.InPod)) {
                lookCloser(now);
            }
            return;
        }
        if (server instanceof ServerLockState.InPod inPod) {
            letLilbeeStart("this pod's lilbee (pid " + inPod.pid() + ") already holds " + paths.serverLock());
            return;
        }
        LockProbe probe;
        try {
            probe = locker.probe(paths.serverLock());
        } catch (LockException e) {
            server = new ServerLockState.Failed(now, e.getMessage());
            note = Optional.of(e.getMessage());
            return;
        }
        if (probe != LockProbe.HELD) {
            server = new ServerLockState.Free(now);
            letLilbeeStart(paths.serverLock() + " is free");
            return;
        }
        server = new ServerLockState.HeldOutside(now);
        if (gate != null) {
            gate.close();
            gate = null;
        }
        leaseAlone = false;
        gateState = new GateState.Yielded(now);
        releaseWait = locker.awaitReleaseInBackground(paths.serverLock());
        note = Optional.of(paths.serverLock() + " is held outside this pod (another pod's lilbee, a stray server, or one"
                + " whose warden restarted): this pod's lilbee may not start; warden waits in the kernel for its release");
        LOG.warnf("Won the gate, but %s; letting the gate go meanwhile, so the serving pod's warden can hold it",
                note.get());
    }

    /** For an elected, started warden whose lilbee does not hold the lock: free, or held where warden cannot see? */
    private void lookCloser(Instant now) {
        if (Duration.between(lookedCloserAt, now).compareTo(LOOK_CLOSER) < 0) {
            return;
        }
        lookedCloserAt = now;
        try {
            if (locker.probe(paths.serverLock()) != LockProbe.HELD) {
                server = new ServerLockState.Free(server instanceof ServerLockState.Free free ? free.since() : now);
                note = Optional.of("waiting for this pod's lilbee to take " + paths.serverLock());
                return;
            }
        } catch (LockException e) {
            server = new ServerLockState.Failed(now, e.getMessage());
            note = Optional.of(e.getMessage());
            return;
        }
        Instant since = server instanceof ServerLockState.HeldOutside outside ? outside.since() : now;
        server = new ServerLockState.HeldOutside(since);
        note = Optional.of(paths.serverLock() + " is held by a process this pod cannot see: this pod's lilbee will be"
                + " refused. If it is this pod's own lilbee, the pod needs shareProcessNamespace: true");
        if (!hinted && Duration.between(since, now).compareTo(INVISIBLE_HINT) >= 0) {
            hinted = true;
            LOG.warn(note.get());
        }
    }

    private void letLilbeeStart(String why) {
        started = true;
        note = Optional.empty();
        LOG.infof("Started: this pod's lilbee may run (%s)", why);
    }

    private void standBy(Instant now) {
        if (gateState instanceof GateState.Standby standby) {
            if (Duration.between(standbyLookAt, now).compareTo(LOOK_CLOSER) >= 0) {
                standbyLookAt = now;
                gateState = new GateState.Standby(standby.since(), procLocks.holderOf(paths.gateLock()));
            }
            return;
        }
        standbyLookAt = now;
        OptionalLong holder = procLocks.holderOf(paths.gateLock());
        gateState = new GateState.Standby(now, holder);
        LOG.infof("%s is held by %s; standing by: this pod's lilbee starts only if this warden is elected",
                paths.gateLock(), holder.isPresent() ? "pid " + holder.getAsLong() : "another pod's warden");
    }

    private void fail(Instant now, String message) {
        if (!(gateState instanceof GateState.Failed failed) || !failed.message().equals(message)) {
            LOG.error(message);
            gateState = new GateState.Failed(now, message);
        }
        retryAt = now.plus(errorRetry);
    }

    /** The wait in the kernel in progress, whose end starts the next round at once. */
    private CompletableFuture<?> pendingWait() {
        return gateWait != null ? gateWait : releaseWait;
    }

    private void finish() {
        if (gateWait != null) {
            gateWait.cancel(false);
        }
        if (releaseWait != null) {
            releaseWait.cancel(false);
        }
        if (gate != null) {
            gate.close();
            gate = null;
            LOG.infof("Released %s", paths.gateLock());
        }
        if (lease != null) {
            lease.close();
        }
        publish(Phase.STOPPED);
        LOG.info("The gate keeper has stopped");
    }

    private void publish(Phase phase) {
        GateSnapshot next = new GateSnapshot(phase, Optional.of(paths.gateLock()), Optional.of(paths.serverLock()),
                gateState, server, started, note, Optional.ofNullable(lease).map(l -> new GateSnapshot.LeaseView(
                        l.name(), l.identity(), l.leading(), l.holder())));
        if (!next.equals(published.get())) {
            published.set(next);
        }
    }
}
