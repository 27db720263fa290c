package dev.warden.gate;

import dev.warden.config.LilbeePaths;
import dev.warden.config.WardenConfig;
import dev.warden.engine.ProcessInfo;
import dev.warden.engine.ProcessTable;
import dev.warden.engine.Signaller;
import dev.warden.hold.HoldSnapshot.Phase;
import dev.warden.hold.KeeperLoop;
import dev.warden.lock.FileId;
import dev.warden.lock.FileLocker;
import dev.warden.lock.HeldLock;
import dev.warden.lock.LockException;
import dev.warden.lock.LockProbe;
import dev.warden.lock.Posix;
import dev.warden.lock.ProcLocks;
import io.quarkus.runtime.ShutdownEvent;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import org.jboss.logging.Logger;

/**
 * Gate mode: elects one pod per data dir through {@code <data dir>/warden-gate.lock}, a flock
 * waited for in the kernel, and says when that pod's {@code lilbee serve} may start. warden never
 * takes lilbee's {@code server.lock} here. A process is this pod's lilbee only on proof: it is visible
 * here ({@code shareProcessNamespace: true}) and holds an exclusive flock on {@code server.lock}'s file
 * through a descriptor of its own ({@link ServerLockHolders}).
 *
 * <ul>
 *   <li>Started only while this warden holds the gate, once {@code server.lock} is free or held in this
 *       pod; a warden restarted beside its serving lilbee earns the gate back first (the elected warden
 *       lets it go when it finds {@code server.lock} held outside its pod).
 *   <li>Serving (readiness) while it holds the gate and a process of this pod holds the file at the path.
 *   <li>A pod whose lilbee holds a {@code server.lock} no longer at the path (a reset) heals: its lilbee is
 *       stopped so that the kubelet restarts it onto the file at the path, and this warden keeps the gate,
 *       the old file and the new, meanwhile.
 *   <li>A warden that wins the gate but finds {@code server.lock} held outside the pod lets the gate
 *       go and waits in the kernel for that release before it contends again.
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

    private final FileLocker locker;
    private final ServerLockHolders holders;
    private final ProcLocks procLocks;
    private final LilbeeFence fence;
    private final InstantSource clock;
    private final KeeperLoop loop;
    private final Duration errorRetry;
    /**
     * How long a pod elected after a reset waits before its lilbee may start: the previous pod's fence, by its warden
     * or by the kubelet (warden.gate.settle).
     */
    private final Duration settle;
    private final Duration handoverAfter;
    private final AtomicReference<GateSnapshot> published = new AtomicReference<>(GateSnapshot.notStarted());
    private final List<Consumer<LilbeePaths>> startListeners = new CopyOnWriteArrayList<>();
    private boolean running;
    /** When this keeper started: one started less than a settle ago cannot have seen a reset just before. */
    private Instant startedAt;
    /**
     * Lease mode: the gate is contended for only while this election is won; null in file mode. Set
     * before the keeper runs; the liveness probe's threads read it too.
     */
    private volatile GateElection lease;

    // Confined to the keeper thread once it runs (handed over by Thread.start).
    private LilbeePaths paths;
    /** Lease mode on a volume whose gate lock cannot be taken at all: the Lease alone elects. */
    private boolean leaseAlone;
    private HeldLock gate;
    /** A gate file replaced while held, kept (with the new one) while this pod's lilbee holds an old server.lock. */
    private HeldLock replacedGate;
    private boolean keptReplacedGate;
    private CompletableFuture<HeldLock> gateWait;
    private CompletableFuture<Void> releaseWait;
    private GateState gateState = new GateState.Waiting("not tried yet");
    private ServerLockState server = new ServerLockState.NotInPod();
    private boolean started;
    /** When this pod's lilbee, having held server.lock, was last seen gone; null while it holds it (or never did). */
    private Instant lilbeeGoneSince;
    private Optional<String> note = Optional.empty();
    /** The files this pod's lilbee was proven to hold: it keeps one after a reset unlinks or replaces the path. */
    private Set<FileId> servedFiles = Set.of();
    /** This round's proven holders, and those of them on a file no longer at the path. */
    private List<ServerLockHolders.Holder> podHolders = List.of();
    private List<ServerLockHolders.Holder> staleHolders = List.of();
    /** Whether every process of the pod has been looked at once: until then no holder is known to be missing. */
    private boolean lookedAtAll;
    private Instant retryAt;
    /**
     * The gate file and server.lock as first seen while this warden waited, and whether either was deleted or
     * replaced since: a reset (or a writer) while another pod served, whose lilbee may still hold the old lock.
     * The gate file is told by its change time too, as a file made anew may get the deleted one's inode; not
     * server.lock, whose change time every filelock open moves.
     */
    private LockFileMark gateSeenWaiting;
    private FileId serverSeenWaiting;
    private boolean replacedWhileWaiting;
    private Instant settleUntil;

    /**
     * A lock file as one {@code stat} (a link not followed) tells it apart: inode and change time. The
     * change time tells a gate file apart (wardens never write to it), not server.lock (see above).
     */
    private record LockFileMark(FileId id, FileTime changed) {
        static LockFileMark at(Path path) {
            try {
                Map<String, Object> attributes = Files.readAttributes(path, "unix:dev,ino,ctime,mode",
                        LinkOption.NOFOLLOW_LINKS);
                // a regular file only: a directory (a misconfiguration) is no lock file to remember
                if (((Integer) attributes.get("mode") & 0170000) != 0100000) {
                    return null;
                }
                return new LockFileMark(new FileId((Long) attributes.get("dev"), (Long) attributes.get("ino")),
                        (FileTime) attributes.get("ctime"));
            } catch (IOException | UnsupportedOperationException e) {
                return null;
            }
        }
    }
    private Instant lookedCloserAt = Instant.EPOCH;
    private Instant standbyLookAt = Instant.EPOCH;

    /**
     * The keeper's timings. {@code settle}: how long to wait, elected after a reset, before this pod's lilbee may
     * start (the previous pod's fence); {@code handoverAfter}: how long this pod's lilbee may be gone before the
     * gate goes to a standby ({@code warden.gate.handover-after}).
     */
    public record Timings(Duration pollInterval, Duration errorRetry, Duration settle, Duration handoverAfter) {
    }

    @Inject
    public GateKeeper(FileLocker locker, Posix posix, ProcessTable processes, ProcLocks procLocks, InstantSource clock,
            WardenConfig config) {
        this(locker, new ServerLockHolders(processes), procLocks, new LilbeeFence(new Signaller(posix, processes),
                config.gate().lease().fenceGrace(), config.engine().killTimeout()), clock, new Timings(
                        config.lock().pollInterval(), config.lock().errorRetry(),
                        settle(config.gate().settle(), config.gate().lease().fenceGrace(), config.engine().killTimeout()),
                        config.gate().handoverAfter()));
    }

    /** The configured settle, but never shorter than a warden's own fence of a lilbee left on a deleted lock. */
    static Duration settle(Duration configured, Duration fenceGrace, Duration killTimeout) {
        Duration fence = fenceGrace.plus(killTimeout);
        return configured.compareTo(fence) < 0 ? fence : configured;
    }

    public GateKeeper(FileLocker locker, ServerLockHolders holders, ProcLocks procLocks, LilbeeFence fence,
            InstantSource clock, Timings timings) {
        this.settle = timings.settle();
        this.handoverAfter = timings.handoverAfter();
        this.locker = locker;
        this.holders = holders;
        this.procLocks = procLocks;
        this.fence = fence;
        this.clock = clock;
        this.errorRetry = timings.errorRetry();
        this.loop = new KeeperLoop("gate keeper", timings.pollInterval());
    }

    /** Starts contending for the gate of {@code lilbeePaths}'s data dir until {@link #stop()}. */
    public void start(LilbeePaths lilbeePaths) {
        start(lilbeePaths, null);
    }

    /**
     * Lease mode: the gate lock is contended for only while {@code election} is won. A warden that does not
     * hold the Lease is never started, lets the gate lock go, and fences every process of its pod that holds
     * server.lock. The election is closed (the Lease released) when the keeper stops.
     */
    public synchronized void start(LilbeePaths lilbeePaths, GateElection election) {
        lease = election;
        if (running) {
            throw new IllegalStateException("the gate keeper is already running");
        }
        running = true;
        startedAt = clock.instant();
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
        startListeners.forEach(listener -> listener.accept(paths));
        loop.start(this::round, this::pendingWait, this::finish);
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
        Optional<String> unfenced = fence.problem();
        if (health.alive() && unfenced.isPresent()) {
            return new KeeperLoop.KeeperHealth(false, health.sinceLastRound(), unfenced.get());
        }
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
            if (lease != null && !lease.decided()) {
                // Restarted beside a serving lilbee, this warden may still hold the Lease: not fenced before it knows.
                note = Optional.of("asking the API server whether the Lease " + lease.name() + " names this warden");
                return;
            }
            boolean outside = lease != null && !lease.leading();
            if (outside) {
                outsideTheLease(now);
            } else {
                keepGate(now);
                if (gate != null || leaseAlone) {
                    whileElected(now);
                } else if (started) {
                    started = false;
                    LOG.warnf("Not started any more: this warden no longer holds %s", paths.gateLock());
                }
            }
            fenceWhoMustGo(outside);
        } finally {
            publish(Phase.RUNNING);
        }
    }

    /**
     * Every holder of server.lock in this pod without the Lease; with it, those on a file no longer at the
     * path (a reset): they are stopped, and the kubelet restarts lilbee onto the file at the path, while this
     * warden keeps the gate. Nobody else is signalled, and those gone are forgotten.
     */
    private void fenceWhoMustGo(boolean outsideTheLease) {
        List<ServerLockHolders.Holder> mustGo = outsideTheLease ? podHolders : staleHolders;
        if (mustGo.isEmpty()) {
            fence.clear();
            return;
        }
        fence.fence(mustGo.stream().map(ServerLockHolders.Holder::process).toList(), outsideTheLease
                ? "this warden does not hold the Lease " + lease.name()
                : "its server.lock was deleted or replaced under it (a lilbee reset, or a writer of the data dir): it"
                        + " must serve from the file at the path, so the kubelet restarts it; this pod keeps the gate"
                        + " meanwhile");
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
        if (letGateGo()) {
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
    }

    /**
     * Which processes of this pod prove to hold {@code server.lock}: the file at the path, and any file this
     * pod's lilbee was proven to hold before (or, after a restart of warden, a deleted one of that name).
     */
    private void lookInPod(Instant now) {
        Optional<FileId> atPath = ProcLocks.idOf(paths.serverLock());
        Set<FileId> wanted = new HashSet<>(servedFiles);
        atPath.ifPresent(wanted::add);
        long device = ProcLocks.idOf(paths.dataDir()).map(FileId::device).orElse(-1L);
        ServerLockHolders.Look look = holders.look(wanted, paths.serverLock().getFileName().toString(), device);
        lookedAtAll = look.complete();
        podHolders = look.holders();
        staleHolders = podHolders.stream().filter(h -> !atPath.equals(Optional.of(h.file()))).toList();
        servedFiles = podHolders.stream().map(ServerLockHolders.Holder::file).collect(Collectors.toUnmodifiableSet());
        if (podHolders.isEmpty()) {
            if (server instanceof ServerLockState.InPod gone) {
                LOG.infof("This pod's lilbee (pid %d) no longer holds %s: not ready", gone.pid(), paths.serverLock());
                server = new ServerLockState.NotInPod();
                lilbeeGoneSince = now;
            }
            return;
        }
        lilbeeGoneSince = null;
        boolean replaced = staleHolders.size() == podHolders.size();
        ServerLockHolders.Holder first = replaced ? staleHolders.getFirst()
                : podHolders.stream().filter(h -> !staleHolders.contains(h)).findFirst().orElseThrow();
        if (server instanceof ServerLockState.InPod seen && seen.pid() == first.pid() && seen.replacedFile() == replaced) {
            return;
        }
        server = new ServerLockState.InPod(first.pid(), now, replaced);
        note = Optional.empty();
        if (replaced) {
            LOG.warnf("This pod's lilbee (pid %d) holds %s on a file since deleted or replaced (a lilbee reset clears"
                    + " the data dir): not ready; it is stopped so that it serves from the file at the path again",
                    first.pid(), paths.serverLock());
        } else {
            LOG.infof("This pod's lilbee (pid %d) holds %s%s", first.pid(), paths.serverLock(),
                    gate != null || leaseAlone ? ": ready" : ", but this warden does not hold the gate yet: not ready");
        }
    }

    /** Moves towards holding the gate without blocking; keeps it when its file is replaced. */
    private void keepGate(Instant now) {
        if (leaseAlone) {
            return;
        }
        if (gate != null) {
            if (!gate.stillAtPath()) {
                retake(now);
            } else if (replacedGate != null && staleHolders.isEmpty()) {
                releaseReplacedGate();
                LOG.infof("Released the replaced %s: no lilbee of this pod holds an old server.lock any more",
                        paths.gateLock());
            }
            return;
        }
        rememberWhileWaiting();
        if (releaseWait != null && !releaseWait.isDone()
                && server instanceof ServerLockState.InPod inPod && !inPod.replacedFile()) {
            // The holder proved to be this pod's own lilbee (it took the lock just as this warden looked): the
            // gate is this pod's to take, and waiting for its release would leave both pods unready.
            releaseWait.cancel(false);
            releaseWait = null;
            LOG.infof("This pod's lilbee (pid %d) holds %s after all: contending for the gate", inPod.pid(),
                    paths.serverLock());
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
                keptReplacedGate = false;
                if (staleHolders.isEmpty()) {
                    old.close();
                } else {
                    // A standby still waiting on the old file must not be let in while the old lilbee runs.
                    releaseReplacedGate();
                    replacedGate = old;
                }
                LOG.warnf("%s was deleted or replaced while this warden held it: holding the new file", paths.gateLock());
                return;
            }
            if (!podHolders.isEmpty()) {
                // Letting the old file go would wake a standby while this pod's lilbee still holds a lock.
                if (!keptReplacedGate) {
                    keptReplacedGate = true;
                    LOG.warnf("%s was deleted or replaced while this warden held it, and another process took the new"
                            + " file first: keeping the old file while this pod's lilbee (pid %d) holds server.lock",
                            paths.gateLock(), podHolders.getFirst().pid());
                }
                return;
            }
            old.close();
            gate = null;
            keptReplacedGate = false;
            gateState = new GateState.Standby(now, procLocks.holderOf(paths.gateLock()));
            LOG.warnf("%s was deleted or replaced while this warden held it, and another process took the new file"
                    + " first: standing by", paths.gateLock());
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
        if (!won.stillAtPath()) {
            // Waited for on a file since replaced: whoever holds the new one is elected, not this warden.
            won.close();
            LOG.infof("Got %s on a file no longer at the path: contending for the new file", paths.gateLock());
            return;
        }
        gate = won;
        retryAt = null;
        settleAfterAReset(now);
        Duration waited = gateState instanceof GateState.Standby standby ? Duration.between(standby.since(), now)
                : Duration.ZERO;
        gateState = new GateState.Elected(now, waited);
        LOG.infof("Elected: holding %s%s", paths.gateLock(),
                waited.isZero() ? "" : " (stood by for " + waited.toMillis() + " ms)");
    }

    /** Lets go of the gate lock and of a replaced one kept beside it; whether the gate lock was held. */
    private boolean letGateGo() {
        releaseReplacedGate();
        if (gate == null) {
            return false;
        }
        gate.close();
        gate = null;
        return true;
    }

    private void releaseReplacedGate() {
        if (replacedGate != null) {
            replacedGate.close();
            replacedGate = null;
        }
    }

    /** Each round without the gate: what the files are, and whether one changed since first seen. */
    private void rememberWhileWaiting() {
        LockFileMark gateNow = LockFileMark.at(paths.gateLock());
        FileId serverNow = lockFileAt(paths.serverLock());
        replacedWhileWaiting |= gateSeenWaiting != null && !gateSeenWaiting.equals(gateNow)
                || serverSeenWaiting != null && !serverSeenWaiting.equals(serverNow);
        if (gateSeenWaiting == null) {
            gateSeenWaiting = gateNow;
        }
        if (serverSeenWaiting == null) {
            serverSeenWaiting = serverNow;
        }
    }

    private static FileId lockFileAt(Path path) {
        LockFileMark mark = LockFileMark.at(path);
        return mark == null ? null : mark.id();
    }

    /**
     * Elected on a gate file, or facing a server.lock, other than the one seen while waiting: the data dir
     * was reset (or written) while another pod served, and that pod's lilbee may still serve on the deleted
     * lock, where no warden here can see it. Its warden stops it (or, killed, its restarted warden does)
     * within the fence's grace, or, should that warden stay down, the kubelet does through lilbee's liveness probe
     * on warden; this pod's lilbee waits a settle, longer than either, before it may start on a free path.
     */
    private void settleAfterAReset(Instant now) {
        // Elected less than a settle after it started (or restarted), whether or not it stood by a moment first: this
        // warden's first look at the files may have come just after a reset it could not see, unless server.lock has
        // stood unchanged for longer than a settle. (ResetSoak: a standby restarted during a reset stood by 17 ms,
        // counted as having waited, and started its lilbee beside the old pod's at once.)
        boolean fresh = Duration.between(startedAt, now).compareTo(settle) < 0;
        rememberWhileWaiting();
        boolean replaced = replacedWhileWaiting;
        gateSeenWaiting = null;
        replacedWhileWaiting = false;
        // server.lock as elected: one deleted between the election and the start decision is a reset too.
        LockFileMark server = LockFileMark.at(paths.serverLock());
        serverSeenWaiting = server == null ? null : server.id();
        if (replaced) {
            settle(now, paths.gateLock() + " or " + paths.serverLock() + " was deleted or replaced while this warden waited"
                    + " (a lilbee reset, or a writer of the data dir)");
        } else if (fresh && (server == null || !server.changed().toInstant().isBefore(now.minus(settle)))) {
            settle(now, "this warden has just started and " + paths.serverLock() + " is new or missing (a lilbee reset"
                    + " may have just deleted it)");
        }
    }

    private void settle(Instant now, String why) {
        settleUntil = now.plus(settle);
        note = Optional.of(why + ": the pod that served may still run a lilbee on a deleted lock, which its warden"
                + " stops (or, with that warden down, the kubelet through lilbee's liveness probe on it); this pod's lilbee"
                + " may start " + settle.toMillis() + " ms after that if server.lock is free then");
        LOG.warn(note.get());
    }

    /** Decides, once elected, whether this pod's lilbee may start. */
    private void whileElected(Instant now) {
        if (!lookedAtAll) {
            // Until every process of the pod was looked at, a lock held "outside" may be this pod's own lilbee's.
            return;
        }
        if (started) {
            if (lilbeeGoneSince != null && Duration.between(lilbeeGoneSince, now).compareTo(handoverAfter) >= 0) {
                handOver(now);
            } else if (!(server instanceof ServerLockState.InPod)) {
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
            if (settleUntil == null && serverSeenWaiting != null
                    && !serverSeenWaiting.equals(lockFileAt(paths.serverLock()))) {
                settle(now, paths.serverLock() + " was deleted or replaced since this warden was elected");
            }
            if (settleUntil != null && now.isBefore(settleUntil)) {
                return;
            }
            settleUntil = null;
            letLilbeeStart(paths.serverLock() + " is free");
            return;
        }
        yieldGate(now, now, "Won the gate");
    }

    /**
     * server.lock is held outside this pod: the gate goes to the pod whose lilbee holds it (its warden
     * proves it and contends), and this warden waits in the kernel for the lock's release before it contends
     * again. Started or not: a pod whose lilbee lost the race for the lock must not keep the gate from the
     * pod whose lilbee won it, or neither is ever ready.
     */
    private void yieldGate(Instant now, Instant heldSince, String what) {
        server = new ServerLockState.HeldOutside(heldSince);
        // The files as they are while another pod's lilbee serves: the wait for its release starts here.
        rememberWhileWaiting();
        if (gate != null) {
            gate.close();
            gate = null;
        }
        leaseAlone = false;
        started = false;
        gateState = new GateState.Yielded(now);
        releaseWait = locker.awaitReleaseInBackground(paths.serverLock());
        note = Optional.of(paths.serverLock() + " is held outside this pod (another pod's lilbee, a stray server, or one"
                + " whose warden restarted): this pod's lilbee may not serve; warden waits in the kernel for its release."
                + " If it is this pod's own lilbee, the pod needs shareProcessNamespace: true and warden lilbee's UID (to"
                + " read its /proc/<pid>/fdinfo)");
        LOG.warnf("%s, but %s; letting the gate go meanwhile, so the serving pod's warden can hold it", what, note.get());
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
        if (server instanceof ServerLockState.HeldOutside outside) {
            // Seen held twice, a look apart: a lilbee of this pod that took it would have been proven by now.
            yieldGate(now, outside.since(), "Started");
            return;
        }
        server = new ServerLockState.HeldOutside(now);
        note = Optional.of(paths.serverLock() + " is held by a process this pod has not proven to be its own: looking"
                + " again in " + LOOK_CLOSER.toMillis() + " ms");
    }

    /**
     * This pod's lilbee served and has been gone for {@code handoverAfter}: the kubelet restarts it only after its
     * back-off (doubling with each crash, up to 5 minutes), while a standby's lilbee would start at once. The gate
     * (and the Lease) goes, and this warden contends again as a standby; its lilbee, restarted, waits for warden's
     * go. With no standby this warden is elected again, and its lilbee serves once the kubelet restarts it.
     */
    private void handOver(Instant now) {
        LOG.warnf("This pod's lilbee has not held %s for %d ms (the kubelet restarts a crashed container after a back-off"
                + " of up to 5 minutes): not started any more, letting the gate go to a standby", paths.serverLock(),
                Duration.between(lilbeeGoneSince, now).toMillis());
        started = false;
        lilbeeGoneSince = null;
        leaseAlone = false;
        letGateGo();
        if (lease != null) {
            lease.stepAside();
        }
        gateState = new GateState.Standby(now, OptionalLong.empty());
        note = Optional.of("this pod's lilbee stopped serving and was not back within " + handoverAfter.toMillis()
                + " ms: the gate was let go to a standby");
    }

    private void letLilbeeStart(String why) {
        started = true;
        serverSeenWaiting = null;
        note = Optional.empty();
        LOG.infof("Started: this pod's lilbee may run (%s)", why);
    }

    private void standBy(Instant now) {
        note = server instanceof ServerLockState.InPod inPod && !inPod.replacedFile() ? Optional.of("this pod's lilbee"
                + " (pid " + inPod.pid() + ") holds " + paths.serverLock() + ", but another warden holds the gate: not"
                + " ready until this one does (the elected warden lets the gate go when it finds server.lock held outside"
                + " its pod)") : Optional.empty();
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
        if (letGateGo()) {
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
                        l.name(), l.identity(), l.leading(), l.holder(), l.renewed())));
        if (!next.equals(published.get())) {
            published.set(next);
        }
    }
}
