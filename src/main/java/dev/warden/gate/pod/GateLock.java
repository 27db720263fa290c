package dev.warden.gate.pod;

import dev.warden.gate.GateAction;
import dev.warden.gate.Observation;
import dev.warden.lock.FileLocker;
import dev.warden.lock.LockAttempt;
import dev.warden.lock.HeldLock;
import dev.warden.lock.LockReach;
import dev.warden.lock.Posix;
import dev.warden.lock.ProcFs;
import dev.warden.time.Moment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import org.jboss.logging.Logger;

/**
 * The gate lock as this warden holds it, or waits for it in the kernel: the I/O behind {@link GateAction.Contend} and
 * {@link GateAction.ReleaseGate}, and what {@link Observation.Gate} reports. A lock held is checked at every look, through
 * this warden's own descriptor ({@link ProcFs#exclusiveFlock}), never assumed: the supervisor it was passed to shares the
 * open file, and a flock(LOCK_UN) through any descriptor of it ends it for all. A restarted warden takes it back from
 * that supervisor ({@link #adopt}). Confined to the gate keeper's thread.
 */
public final class GateLock implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(GateLock.class);

    private final FileLocker locker;
    private final LockAttempt attempt;
    private final ProcFs procs;
    private final Path path;
    private final Duration errorRetry;
    /** The gate lock's heartbeat where a file lock elects (none where the Lease does, whose pods' locks need not meet). */
    private final Optional<LockReach> reach;
    private HeldLock held;
    /** The lock let go while this pod's supervisor holds the same open file for its stopping lilbee: kept, to be unlocked. */
    private HeldLock retired;
    /** Why the lock cannot be taken, and when to try again. */
    private String unlockable;
    private Moment retryAt;

    /** @param reach the heartbeat that proves a lock taken excludes the other pods; empty where the Lease elects */
    public GateLock(FileLocker locker, ProcFs procs, Path path, Duration errorRetry, Optional<LockReach> reach) {
        this.locker = locker;
        this.attempt = new LockAttempt(locker, path);
        this.procs = procs;
        this.path = path;
        this.errorRetry = errorRetry;
        this.reach = reach;
    }

    /** What is held, as one look: the file, whether it is still at the path, and whether its lock is still there. */
    Observation.Gate look() {
        if (held == null) {
            attempt.ended().ifPresent(ended -> settle(ended, null));
        }
        if (held != null) {
            if (!procs.exclusiveFlock(procs.self(), held.descriptorToPass(), held.fileId())) {
                return new Observation.Gate.Lost(held.fileId());
            }
            boolean atPath = held.stillAtPath();
            // A lock on a file no longer at the path is let go whatever its heartbeat shows.
            Optional<LockReach.Verdict> verdict = reach.filter(r -> atPath).map(r -> r.keep(held.fileId()));
            if (verdict.isPresent() && !(verdict.get() instanceof LockReach.Verdict.Proven)) {
                return new Observation.Gate.Unproven(held.fileId(), verdict.get() instanceof LockReach.Verdict.Shared,
                        verdict.get().why());
            }
            return new Observation.Gate.Held(held.fileId(), atPath);
        }
        return unlockable != null ? new Observation.Gate.Unlockable(unlockable) : new Observation.Gate.NotHeld();
    }

    /** Takes the lock if it is free, else waits for it in the kernel; after a failure, only once the retry is due. */
    void contend(Moment now) {
        if (held != null || attempt.pending() != null || retryAt != null && now.isBefore(retryAt)) {
            return;
        }
        settle(attempt.take(), now);
    }

    /** What an attempt came to: the lock held (its heartbeat starts), a wait in the kernel, or a failure to retry. */
    private void settle(LockAttempt.Outcome outcome, Moment now) {
        if (outcome instanceof LockAttempt.Outcome.Failed failed) {
            fail(failed.why(), now);
            return;
        }
        unlockable = null;
        retryAt = null;
        if (outcome instanceof LockAttempt.Outcome.Won won) {
            held = won.lock();
            taken();
        }
    }

    /** A lock just taken: its heartbeat starts. */
    private void taken() {
        reach.ifPresent(r -> r.taken(held.fileId()));
    }

    private void fail(String why, Moment now) {
        if (!why.equals(unlockable)) {
            LOG.error(why);
        }
        unlockable = why;
        retryAt = now == null ? null : now.plus(errorRetry);
    }

    /**
     * Takes back the gate lock this pod's supervisor gives a restarted warden (the descriptor a start passed its
     * previous run): held from here when it is the gate file at the path and its lock is that open file's. A warden
     * waiting for the gate stops waiting; one that holds it already keeps its own. Anything else is closed.
     */
    void adopt(int fd) {
        if (held != null) {
            locker.adopt(fd, path, procs).ifPresent(HeldLock::close);
            return;
        }
        locker.adopt(fd, path, procs).ifPresent(adopted -> {
            cancelWaiting();
            held = adopted;
            taken();
            LOG.infof("Holding %s again: this pod's supervisor gave back the lock it kept for its lilbee", path);
        });
    }

    private void cancelWaiting() {
        attempt.cancel();
    }

    /**
     * This warden's descriptors of the lock, closed, and a wait for it given up: a supervisor given the same open file
     * keeps the gate locked.
     */
    void release() {
        cancelWaiting();
        // This pod's supervisor may keep the same open file locked for a lilbee that is still stopping: no record released.
        if (held != null) {
            reach.ifPresent(r -> r.forget(held.fileId()));
            held.close();
            held = null;
        }
        if (retired != null) {
            reach.ifPresent(r -> r.forget(retired.fileId()));
            retired.close();
            retired = null;
        }
    }

    /** No longer this warden's: the lock is kept only so that {@link #unlock} can end it for this pod's supervisor too. */
    void retire() {
        cancelWaiting();
        if (held != null) {
            if (retired != null) {
                retired.close();
            }
            retired = held;
            held = null;
        }
    }

    /**
     * The retired lock unlocked, for this pod's supervisor too, which holds the same open file until its lilbee has
     * exited: the gate is free at once. A failure leaves it to that lilbee's exit, as a closed descriptor does.
     */
    void unlock() {
        if (retired != null) {
            try {
                // This pod's lilbee has let server.lock go: nothing of this hold outlives the unlock.
                reach.ifPresent(r -> r.letGo(retired.fileId()));
                retired.unlockAndClose();
                LOG.debugf("%s unlocked: this pod's stopping lilbee has let server.lock go", path);
            } catch (Posix.ErrnoException e) {
                LOG.warnf("cannot unlock %s (%s): the gate is free once this pod's lilbee has exited", path, e.getMessage());
            }
            retired = null;
        }
    }

    /** The descriptor to pass with a permit to start, while held. */
    public OptionalInt descriptor() {
        return held == null ? OptionalInt.empty() : OptionalInt.of(held.descriptorToPass());
    }

    /** The wait in the kernel in progress, whose end starts the next round at once. */
    public CompletableFuture<?> pending() {
        return held == null ? attempt.pending() : null;
    }

    @Override
    public void close() {
        release();
    }
}
