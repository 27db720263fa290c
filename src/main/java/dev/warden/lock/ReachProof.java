package dev.warden.lock;

import dev.warden.time.Moment;
import java.time.Duration;
import java.util.Optional;

/**
 * Whether a lock this warden holds excludes the other pods on the volume, decided from its heartbeat file alone (pure:
 * the record read, the time; {@link LockReach} does the I/O).
 *
 * <p>Holders of one lock domain (one kernel, one device: the mount's superblock) meet in one lock table, so a lock taken
 * in the domain of the record's holder proves that holder let go, whatever the volume does across nodes: it is held at
 * once, and so is one taken where no record names another holder. A lock taken while the record names a holder of
 * another domain is proven only once the record stays still for {@link #window}: a holder that still beats holds the same
 * lock through a mount whose locks do not reach this one. Only silence ends that wait: a record saying released, or none,
 * is no proof (any process of the pod can write or delete the file). While held, every record another holder writes is
 * compared: the later holder stands by, the first keeps serving, unless it fell silent for the window meanwhile. Open
 * only for the mutation test, which undoes one rule at a time.
 */
public class ReachProof {

    /** How many beats a record must stay still, at least, before its holder counts as gone. */
    public static final int BEATS_IN_WINDOW = 4;

    private final String holder;
    private final String pod;
    private final String domain;
    private final Duration beat;
    private final Duration window;

    /**
     * @param holder this run's token, unique to it
     * @param domain the lock domain this warden holds the lock in ({@link LockReach#domain})
     * @param beat how often a holder writes its record
     * @param outlives how long what a holder serves may outlive its last beat (gate mode: a lilbee outlives its last
     *     permit by the permit and its overrun); a record still for that long, and a beat more, names a holder whose
     *     server is gone
     */
    public ReachProof(String holder, String pod, String domain, Duration beat, Duration outlives) {
        this.holder = holder;
        this.pod = pod;
        this.domain = domain;
        this.beat = beat;
        Duration beats = beat.multipliedBy(BEATS_IN_WINDOW);
        Duration served = outlives.plus(beat);
        this.window = beats.compareTo(served) >= 0 ? beats : served;
    }

    /** What is known of the lock's reach. */
    public sealed interface Reach {

        /** Taken while the record named a holder of another domain: watching whether it still beats. */
        record Proving(Moment since, Optional<Heartbeat> seen) implements Reach {
        }

        /**
         * Ours: this warden beats {@code mine}. {@code overlapSeen}: when a later holder was last seen beating the same
         * lock through its own mount (it stands by; this warden says so while it lasts).
         */
        record Proven(Heartbeat mine, Moment wroteAt, Optional<Moment> overlapSeen) implements Reach {
        }

        /** Another holder, earlier than this warden, beats the same lock: the lock does not reach it. Not ours to serve. */
        record Shared(Heartbeat other, Moment changedAt) implements Reach {
        }
    }

    /** A state and the record to write now, if any (written before the state is believed). */
    public record Step(Reach reach, Optional<Heartbeat> write) {
    }

    public Duration window() {
        return window;
    }

    /**
     * The lock was just taken.
     *
     * @param seen the record at the path now; empty when none or not a record
     */
    public Step taken(Optional<Heartbeat> seen, Moment now) {
        if (elsewhere(seen)) {
            return new Step(new Reach.Proving(now, seen), Optional.empty());
        }
        return proven(seen.map(Heartbeat::generation).orElse(0L), now);
    }

    /** One look while the lock is held, with the record read now. */
    public Step step(Reach reach, Optional<Heartbeat> seen, Moment now) {
        return switch (reach) {
            case Reach.Proving proving when !seen.equals(proving.seen()) -> changed(seen, now);
            case Reach.Proving proving when !now.isBefore(proving.since().plus(window)) ->
                    proven(generation(proving.seen(), seen), now);
            case Reach.Proving proving -> new Step(proving, Optional.empty());
            case Reach.Shared shared when !seen.equals(Optional.of(shared.other())) -> changed(seen, now);
            case Reach.Shared shared when !now.isBefore(shared.changedAt().plus(window)) ->
                    proven(generation(Optional.of(shared.other()), seen), now);
            case Reach.Shared shared -> new Step(shared, Optional.empty());
            case Reach.Proven proven -> whileProven(proven, seen, now);
        };
    }

    /** While waiting, the record changed: another holder beats (shared), or it was let go or deleted (wait on). */
    private Step changed(Optional<Heartbeat> seen, Moment now) {
        return live(seen) ? new Step(new Reach.Shared(seen.get(), now), Optional.empty())
                : new Step(new Reach.Proving(now, seen), Optional.empty());
    }

    /**
     * Held and proven: the first of two holders keeps serving, unless it fell silent for the window (a pause): the other
     * was entitled to take over then, and this one stands by.
     */
    private Step whileProven(Reach.Proven proven, Optional<Heartbeat> seen, Moment now) {
        Optional<Moment> overlap = proven.overlapSeen().filter(at -> now.isBefore(at.plus(window)));
        if (live(seen)) {
            boolean lapsed = !now.isBefore(proven.wroteAt().plus(window));
            if (lapsed || !seen.get().laterThan(proven.mine())) {
                return new Step(new Reach.Shared(seen.get(), now), Optional.empty());
            }
            overlap = Optional.of(now);
        }
        if (now.isBefore(proven.wroteAt().plus(beat))) {
            return new Step(new Reach.Proven(proven.mine(), proven.wroteAt(), overlap), Optional.empty());
        }
        Heartbeat next = proven.mine().next();
        return new Step(new Reach.Proven(next, now, overlap), Optional.of(next));
    }

    /** The record to leave when this warden lets the lock go and nothing it served outlives it: released. */
    public Optional<Heartbeat> letGo(Reach reach) {
        return reach instanceof Reach.Proven proven ? Optional.of(proven.mine().letGo()) : Optional.empty();
    }

    /** When the record is next worth reading: a beat after the last look or write. */
    public Moment nextLook(Moment lastLook) {
        return lastLook.plus(beat);
    }

    /**
     * A record of another holder of another domain that has not let go: one that beats through a mount this lock may not
     * reach. One of this warden's own domain cannot be honest while this warden holds the lock (the kernel would have
     * kept one of them out): a forgery, ignored, as is what cannot be read.
     */
    private boolean live(Optional<Heartbeat> seen) {
        return elsewhere(seen) && !seen.get().released() && seen.get() != Heartbeat.UNREADABLE;
    }

    /**
     * A record of another holder of another domain, let go or not, or something that cannot be read: this warden's lock
     * proves nothing of it (a record saying released is anyone's to write).
     */
    private boolean elsewhere(Optional<Heartbeat> seen) {
        return seen.isPresent() && !seen.get().holder().equals(holder) && !seen.get().domain().equals(domain);
    }

    private Step proven(long above, Moment now) {
        Heartbeat mine = new Heartbeat(holder, pod, domain, above + 1, 0, false);
        return new Step(new Reach.Proven(mine, now, Optional.empty()), Optional.of(mine));
    }

    private static long generation(Optional<Heartbeat> before, Optional<Heartbeat> seen) {
        return Math.max(before.map(Heartbeat::generation).orElse(0L), seen.map(Heartbeat::generation).orElse(0L));
    }
}
