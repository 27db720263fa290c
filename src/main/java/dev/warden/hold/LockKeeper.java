package dev.warden.hold;

import dev.warden.config.LilbeePaths;
import dev.warden.config.WardenConfig;
import dev.warden.keeper.KeeperLoop;
import dev.warden.keeper.KeeperPhase;
import dev.warden.lock.FileLocker;
import dev.warden.lock.HeldLock;
import dev.warden.lock.LockAttempt;
import dev.warden.lock.LockException;
import dev.warden.lock.LockReach;
import dev.warden.lock.ProcLocks;
import io.quarkus.runtime.ShutdownEvent;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.jboss.logging.Logger;

/**
 * Holds lilbee's server locks for as long as warden serves: the scope lock first (when a scope
 * is configured), then the data-dir lock, released in reverse. While another process holds one,
 * warden is a standby: a dedicated thread waits for it in the kernel, so warden takes it the
 * instant the holder lets go or dies.
 *
 * <p>All lock state lives on the keeper's own thread; the probes read the {@link HoldSnapshot}
 * it publishes and never touch the volume.
 */
@Singleton
public class LockKeeper {

    private static final Logger LOG = Logger.getLogger(LockKeeper.class);

    /**
     * How often a standby re-reads who holds a lock (the kernel's lock table, the owner file):
     * fresh enough for a person reading the probe, rare enough to cost nothing.
     */
    private static final Duration HOLDER_REFRESH = Duration.ofSeconds(1);

    private final FileLocker locker;
    private final ProcLocks procLocks;
    private final ScopeOwnerFile ownerFile;
    private final InstantSource clock;
    private final KeeperLoop loop;
    private final Duration errorRetry;
    private final LockReach.Factory reaches;
    private final long pid = ProcessHandle.current().pid();

    private final AtomicReference<HoldSnapshot> published = new AtomicReference<>(HoldSnapshot.notStarted());
    private final List<BiConsumer<LilbeePaths, Set<LockKind>>> planListeners = new CopyOnWriteArrayList<>();
    private final List<Consumer<LockReach.Verdict>> reachListeners = new CopyOnWriteArrayList<>();
    private boolean started;

    // Confined to the keeper thread once it runs (handed over by Thread.start).
    private LilbeePaths paths;
    /** Replaced whole at the start; read by the metrics too. */
    private volatile List<Slot> slots = List.of();
    private boolean everHeldAll;

    @Inject
    public LockKeeper(FileLocker locker, ProcLocks procLocks, ScopeOwnerFile ownerFile, InstantSource clock,
            WardenConfig config, LockReach.Factory reaches) {
        this(locker, procLocks, ownerFile, clock, config.lock().pollInterval(), config.lock().errorRetry(), reaches);
    }

    /** As warden runs it, with a heartbeat of the default beat beside the data-dir lock. */
    public LockKeeper(FileLocker locker, ProcLocks procLocks, ScopeOwnerFile ownerFile, InstantSource clock,
            Duration pollInterval, Duration errorRetry) {
        this(locker, procLocks, ownerFile, clock, pollInterval, errorRetry, LockReach.Factory.system(Duration.ofMillis(250)));
    }

    public LockKeeper(FileLocker locker, ProcLocks procLocks, ScopeOwnerFile ownerFile, InstantSource clock,
            Duration pollInterval, Duration errorRetry, LockReach.Factory reaches) {
        this.reaches = reaches;
        this.locker = locker;
        this.procLocks = procLocks;
        this.ownerFile = ownerFile;
        this.clock = clock;
        this.loop = new KeeperLoop("lock keeper", pollInterval);
        this.errorRetry = errorRetry;
    }

    /**
     * Starts holding the locks of {@code lilbeePaths} and keeps them until {@link #stop()}.
     *
     * @param wait when false, a lock another process holds ends the start at once with a
     *     {@link Refusal} (and nothing held), as {@code lilbee serve} refuses
     * @throws LockException when {@code wait} is false and a lock cannot be taken at all
     */
    public synchronized Optional<Refusal> start(LilbeePaths lilbeePaths, boolean wait) throws LockException {
        if (started) {
            throw new IllegalStateException("the lock keeper is already running");
        }
        started = true;
        paths = prepare(lilbeePaths);
        List<Slot> planned = new ArrayList<>();
        paths.scopeLock().ifPresent(p -> planned.add(new Slot(LockKind.SCOPE, p, locker)));
        Slot dataDir = new Slot(LockKind.DATA_DIR, paths.serverLock(), locker);
        // The scope lock excludes servers of the scope on this volume's mounts too, but one server per data dir is the
        // promise, and the data-dir lock is what keeps it: that is the lock whose reach is proven.
        // Nothing of hold mode's outlives its hold: warden holds server.lock in place of the server.
        dataDir.reach = reaches.of(paths.serverLock(), Duration.ZERO);
        dataDir.reach.onChange(verdict -> reachListeners.forEach(listener -> listener.accept(verdict)));
        planned.add(dataDir);
        slots = List.copyOf(planned);
        Set<LockKind> kinds = EnumSet.noneOf(LockKind.class);
        planned.forEach(slot -> kinds.add(slot.kind));
        planListeners.forEach(listener -> listener.accept(paths, Set.copyOf(kinds)));
        if (paths.scopeDir().isPresent()) {
            // The owner file's first write would otherwise load and compile its JSON path on the takeover.
            ownerFile.warm(paths.dataDir(), pid);
        }
        if (!wait) {
            Optional<Refusal> refusal = takeAllNow(clock.instant());
            if (refusal.isPresent()) {
                return refusal;
            }
        }
        publish(KeeperPhase.RUNNING);
        loop.start(this::round, this::pendingWait, this::finish);
        return Optional.empty();
    }

    /**
     * Calls {@code listener} with the kinds of lock each {@link #start} is about to hold, so the metrics
     * have a series for each lock this warden holds and none for a lock it was not configured with.
     */
    public void onPlanned(BiConsumer<LilbeePaths, Set<LockKind>> listener) {
        planListeners.add(listener);
    }

    /**
     * Calls {@code listener} with each change of what is known of the data-dir lock's reach (proving it, shared with a
     * pod whose mount it does not reach, proven), on the keeper's thread: it must not wait.
     */
    public void onReachChange(Consumer<LockReach.Verdict> listener) {
        reachListeners.add(listener);
    }

    /** Whether another pod holds the data-dir lock too, through a mount whose locks do not reach this one. */
    public boolean lockShared() {
        return slots.stream().anyMatch(slot -> slot.reach != null && slot.reach.shared());
    }

    /** Lets go of every lock (owner file before its scope lock), promptly. Safe to call twice. */
    public void stop() {
        loop.stop();
    }

    void onShutdown(@Observes ShutdownEvent event) {
        stop();
    }

    public HoldSnapshot snapshot() {
        return published.get();
    }

    /** The paths being held, canonicalised; empty before {@link #start}. */
    public Optional<LilbeePaths> paths() {
        return Optional.ofNullable(published.get().phase() == KeeperPhase.NOT_STARTED ? null : paths);
    }

    /** Whether the keeper's own machinery works (see {@link KeeperLoop#health}), for the liveness probe. */
    public KeeperLoop.KeeperHealth health(Duration stallTimeout) {
        return loop.health(stallTimeout);
    }

    private static LilbeePaths prepare(LilbeePaths lilbeePaths) {
        try {
            return lilbeePaths.created();
        } catch (RuntimeException e) {
            // The keeper reports it per lock and retries: the volume may be mounted later.
            LOG.warn(e.getMessage());
            return lilbeePaths.canonical();
        }
    }

    private Optional<Refusal> takeAllNow(Instant now) throws LockException {
        for (int i = 0; i < slots.size(); i++) {
            Slot slot = slots.get(i);
            Optional<HeldLock> lock;
            try {
                lock = locker.tryLockCreatingDirs(slot.path);
            } catch (LockException e) {
                releaseFrom(0);
                throw e;
            }
            if (lock.isEmpty()) {
                LockState.HeldElsewhere holder = lookUpHolder(slot, now, now);
                releaseFrom(0);
                return Optional.of(new Refusal(slot.kind, slot.path, holder));
            }
            becomeHolder(slot, lock.get(), now);
        }
        everHeldAll = allHeld();
        writeOwnerIfDue();
        return Optional.empty();
    }

    private void round() {
        try {
            takeInOrder(clock.instant());
        } finally {
            writeOwnerIfDue();
            publish(KeeperPhase.RUNNING);
        }
    }

    /** The wait in the kernel in progress, whose end starts the next round at once. */
    private CompletableFuture<?> pendingWait() {
        return slots.stream().map(s -> s.attempt.pending()).filter(java.util.Objects::nonNull).findFirst().orElse(null);
    }

    private void finish() {
        for (Slot slot : slots) {
            slot.attempt.cancel();
        }
        releaseFrom(0);
        publish(KeeperPhase.STOPPED);
        LOG.info("The lock keeper has stopped");
    }

    private void takeInOrder(Instant now) {
        for (int i = 0; i < slots.size(); i++) {
            Slot slot = slots.get(i);
            if (slot.held != null) {
                if (slot.held.stillAtPath()) {
                    if (slot.reach != null) {
                        LockState next = proven(slot.reach.keep(slot.held.fileId()), slot.state, now);
                        if (next instanceof LockState.Held && !(slot.state instanceof LockState.Held)) {
                            LOG.infof("Holding %s", slot.path);
                        }
                        slot.state = next;
                    }
                    continue;
                }
                LOG.warnf("%s was deleted or replaced while warden held it: letting go and taking it again", slot.path);
                releaseFrom(i);
            }
            if (!take(slot, now)) {
                for (Slot later : slots.subList(i + 1, slots.size())) {
                    later.state = new LockState.Waiting("the " + slot.kind.label() + " lock is taken first");
                }
                return;
            }
        }
        everHeldAll |= allHeld();
    }

    /** Every lock held, and proven where its reach is: what readiness waits for. */
    private boolean allHeld() {
        return slots.stream().allMatch(slot -> slot.state instanceof LockState.Held);
    }

    /** Moves one lock towards held without blocking; true when it is ours. */
    private boolean take(Slot slot, Instant now) {
        if (slot.attempt.pending() == null && slot.retryAt != null && now.isBefore(slot.retryAt)) {
            return false;
        }
        return switch (slot.attempt.take()) {
            case LockAttempt.Outcome.Won won -> {
                becomeHolder(slot, won.lock(), now);
                yield true;
            }
            case LockAttempt.Outcome.Waiting waiting -> {
                standBy(slot, now);
                yield false;
            }
            case LockAttempt.Outcome.Failed failed -> {
                fail(slot, now, failed.why());
                yield false;
            }
        };
    }

    private void becomeHolder(Slot slot, HeldLock lock, Instant now) {
        slot.held = lock;
        slot.retryAt = null;
        LockState previous = slot.state;
        LockState held = new LockState.Held(now, previous instanceof LockState.HeldElsewhere elsewhere
                ? Duration.between(elsewhere.since(), now) : Duration.ZERO);
        slot.state = slot.reach == null ? held : proven(slot.reach.taken(lock.fileId()), held, now);
        if (!(slot.state instanceof LockState.Held)) {
            return;
        }
        if (previous instanceof LockState.HeldElsewhere elsewhere) {
            LOG.infof("Took over %s (another process held it since %s)", slot.path, elsewhere.since());
        } else {
            LOG.infof("Holding %s", slot.path);
        }
    }

    /** The state of a lock held, by what its heartbeat shows: held only once no other pod holds it through its own mount. */
    private static LockState proven(LockReach.Verdict verdict, LockState state, Instant now) {
        return switch (verdict) {
            case LockReach.Verdict.Proven proven when state instanceof LockState.Held -> state;
            case LockReach.Verdict.Proven proven -> new LockState.Held(now, state instanceof LockState.Proving proving
                    ? Duration.between(proving.since(), now) : Duration.ZERO);
            case LockReach.Verdict.Proving proving when state instanceof LockState.Proving same
                    && same.why().equals(proving.why()) -> state;
            case LockReach.Verdict.Proving proving -> new LockState.Proving(now, proving.why());
            case LockReach.Verdict.Shared shared when state instanceof LockState.Shared same
                    && same.why().equals(shared.why()) -> state;
            case LockReach.Verdict.Shared shared -> new LockState.Shared(now, shared.why());
        };
    }

    /**
     * Writes the scope's owner file once the round has tried the locks after the scope: the data-dir
     * lock is taken first (a takeover is not held up by a file write), and the owner is still named
     * while warden holds the scope, waiting for the data dir or not.
     */
    private void writeOwnerIfDue() {
        for (Slot slot : slots) {
            if (slot.kind == LockKind.SCOPE && slot.held != null && !slot.ownerWritten) {
                slot.ownerWritten = true;
                Path owner = paths.scopeOwner().orElseThrow();
                try {
                    ownerFile.write(owner, paths.dataDir(), pid);
                } catch (IOException e) {
                    LOG.warnf("Holding the scope lock, but cannot write %s (%s): refused servers will not know who holds it",
                            owner, e);
                }
            }
        }
    }

    private void standBy(Slot slot, Instant now) {
        if (slot.state instanceof LockState.HeldElsewhere elsewhere) {
            if (Duration.between(slot.holderReadAt, now).compareTo(HOLDER_REFRESH) >= 0) {
                slot.state = lookUpHolder(slot, elsewhere.since(), now);
            }
            return;
        }
        LockState.HeldElsewhere elsewhere = lookUpHolder(slot, now, now);
        slot.state = elsewhere;
        LOG.infof("%s is held by %s; standing by and taking it the moment it is free", slot.path,
                elsewhere.holderPid().isPresent() ? "pid " + elsewhere.holderPid().getAsLong() : "another process");
    }

    private LockState.HeldElsewhere lookUpHolder(Slot slot, Instant since, Instant now) {
        slot.holderReadAt = now;
        OptionalLong holder = procLocks.holderOf(slot.path);
        ScopeOwner owner = slot.kind == LockKind.SCOPE
                ? ownerFile.read(paths.scopeOwner().orElseThrow())
                : ScopeOwner.UNKNOWN;
        return new LockState.HeldElsewhere(since, holder, owner);
    }

    private void fail(Slot slot, Instant now, String message) {
        if (!(slot.state instanceof LockState.Failed failed) || !failed.message().equals(message)) {
            LOG.error(message);
            slot.state = new LockState.Failed(now, message);
        }
        slot.retryAt = now.plus(errorRetry);
    }

    /** Releases slots {@code from} onwards, last taken first; the owner file goes before its scope lock. */
    private void releaseFrom(int from) {
        for (int i = slots.size() - 1; i >= from; i--) {
            Slot slot = slots.get(i);
            if (slot.held == null) {
                continue;
            }
            if (slot.kind == LockKind.SCOPE) {
                paths.scopeOwner().ifPresent(owner -> {
                    try {
                        ownerFile.remove(owner);
                    } catch (IOException e) {
                        LOG.warnf("Cannot remove %s (%s) before releasing the scope", owner, e);
                    }
                });
            }
            if (slot.reach != null) {
                slot.reach.letGo(slot.held.fileId());
            }
            slot.held.close();
            slot.held = null;
            slot.ownerWritten = false;
            slot.state = new LockState.Waiting("released");
            LOG.infof("Released %s", slot.path);
        }
    }

    private void publish(KeeperPhase phase) {
        List<LockStatus> locks = slots.stream().map(s -> new LockStatus(s.kind, s.path, s.state)).toList();
        HoldSnapshot next = new HoldSnapshot(phase, locks, everHeldAll);
        if (!next.equals(published.get())) {
            published.set(next);
        }
    }

    /** One lock's keeping state; touched only by the keeper thread. */
    private static final class Slot {
        final LockKind kind;
        final Path path;
        HeldLock held;
        /** For the scope: whether this hold's owner file has been written. */
        boolean ownerWritten;
        final LockAttempt attempt;
        /** The heartbeat proving that the lock excludes the other pods of the volume; null for a lock not proven so. */
        LockReach reach;
        LockState state = new LockState.Waiting("not tried yet");
        Instant retryAt;
        Instant holderReadAt = Instant.EPOCH;

        Slot(LockKind kind, Path path, FileLocker locker) {
            this.kind = kind;
            this.path = path;
            this.attempt = new LockAttempt(locker, path);
        }
    }
}
