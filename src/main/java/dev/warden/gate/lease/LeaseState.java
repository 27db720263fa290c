package dev.warden.gate.lease;

import dev.warden.time.Moment;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * Where a warden stands in the Lease election, as one value: every callback of the elector and every request it sends
 * or answer it reads returns the next one, and what the gate asks (does this warden lead, until when; has the API
 * server answered yet; has the elector gone silent) is read off it. Moments are on the monotonic clock; the Lease's
 * own times (wall clock) are shown, never counted on.
 *
 * @param leading whether the elector says this warden leads
 * @param lastWriteSent when the last write naming this warden that the API server took was sent
 * @param lastAsked when the elector last began a request
 * @param contendingSince when the elector began, once it has
 * @param answered whether the first attempt to acquire or renew has been answered (or failed) since it began
 * @param holder the holder as last seen (empty: none, or a released Lease)
 * @param renewed when the Lease was last renewed, as last read or written
 * @param asideUntil while this warden stays out of the election after stepping aside
 */
public record LeaseState(boolean leading, Optional<Moment> lastWriteSent, Moment lastAsked, Optional<Moment> contendingSince,
        boolean answered, Optional<String> holder, Optional<Instant> renewed, Optional<Moment> asideUntil) {

    public static LeaseState initial(Moment now) {
        return new LeaseState(false, Optional.empty(), now, Optional.empty(), false, Optional.empty(), Optional.empty(),
                Optional.empty());
    }

    /**
     * While this warden leads, the moment its lead ends: the elector says it leads, and the last write naming it that
     * the API server took was sent less than the renew deadline ago. The deadline is counted on this warden's clock
     * from the send (the election notices a missed deadline only after the renewal in flight times out), while nobody else
     * can take the Lease sooner than a Lease duration after that write was sent.
     */
    public Optional<Moment> leadingUntil(Moment now, Duration renewDeadline) {
        if (!leading || lastWriteSent.isEmpty()) {
            return Optional.empty();
        }
        Moment until = lastWriteSent.get().plus(renewDeadline);
        return now.isBefore(until) ? Optional.of(until) : Optional.empty();
    }

    /**
     * Whether the first attempt has been answered (or failed), or took longer than a request may: until then "not
     * leading" may mean "not asked yet", and a warden restarted beside its serving lilbee says nothing.
     */
    public boolean decided(Moment now, Duration retryPeriod) {
        return contendingSince.isEmpty() || answered || now.since(contendingSince.get()).compareTo(retryPeriod) > 0;
    }

    /**
     * How long the elector has gone without asking anything, once that is longer than {@code patience} and than a
     * working elector ever goes (five retry periods): empty while it works.
     */
    public Optional<Duration> stalled(Moment now, Duration patience, Duration retryPeriod) {
        Duration silent = now.since(lastAsked);
        Duration working = retryPeriod.multipliedBy(5);
        Duration bound = patience.compareTo(working) > 0 ? patience : working;
        return silent.compareTo(bound) <= 0 ? Optional.empty() : Optional.of(silent);
    }

    public LeaseState began(Moment now) {
        return new LeaseState(leading, lastWriteSent, now, Optional.of(now), answered, holder, renewed, asideUntil);
    }

    public LeaseState asked(Moment now) {
        return new LeaseState(leading, lastWriteSent, now, contendingSince, answered, holder, renewed, asideUntil);
    }

    /**
     * A read of the Lease answered: who holds it, renewed when. One that names this warden (restarted in place: its
     * identity names its pod and node) is renewed at once by the elector, so the answer this warden waits for is that
     * write's; any other read is the answer. Nothing here trusts the wall clock: the lead counts only from a write of
     * this warden's own run, sent at a moment of its own clock.
     */
    public LeaseState read(Optional<String> holderIdentity, Optional<Instant> renewTime, String identity) {
        boolean answer = answered || !holderIdentity.equals(Optional.of(identity));
        return new LeaseState(leading, lastWriteSent, lastAsked, contendingSince, answer, holder, renewTime.or(() -> renewed),
                asideUntil);
    }

    /** A read or a write that failed: answered all the same (the API server is there, or is not), nothing learnt. */
    public LeaseState failed() {
        return new LeaseState(leading, lastWriteSent, lastAsked, contendingSince, true, holder, renewed, asideUntil);
    }

    /** A write the API server took, sent at {@code sentAt}: when it names this warden, its lead counts from there. */
    public LeaseState accepted(String writtenHolder, Optional<Instant> renewTime, String identity, Moment sentAt) {
        boolean mine = identity.equals(writtenHolder);
        return new LeaseState(leading, mine ? Optional.of(sentAt) : lastWriteSent, lastAsked, contendingSince, true, holder,
                renewTime.or(() -> renewed), asideUntil);
    }

    public LeaseState startedLeading(String identity) {
        return new LeaseState(true, lastWriteSent, lastAsked, contendingSince, answered, Optional.of(identity), renewed,
                asideUntil);
    }

    public LeaseState stoppedLeading() {
        return new LeaseState(false, lastWriteSent, lastAsked, contendingSince, answered, holder, renewed, asideUntil);
    }

    /** The holder seen changed; empty: the Lease was released and names nobody. */
    public LeaseState newLeader(Optional<String> identity) {
        return new LeaseState(leading, lastWriteSent, lastAsked, contendingSince, answered, identity, renewed, asideUntil);
    }

    public LeaseState asideUntil(Moment until) {
        return new LeaseState(false, lastWriteSent, lastAsked, contendingSince, answered, holder, renewed, Optional.of(until));
    }

    public LeaseState backIn() {
        return new LeaseState(leading, lastWriteSent, lastAsked, contendingSince, answered, holder, renewed, Optional.empty());
    }
}
