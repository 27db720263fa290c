package dev.warden.gate.lease;

import dev.warden.time.Moment;
import java.time.Clock;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.DoubleSupplier;
import java.util.function.UnaryOperator;
import org.jboss.logging.Logger;

/**
 * The Lease election's loop, as client-go's leader election runs it, one step at a time: while not leading, try to take
 * the Lease every retry period (jittered up to 1.2 more, so that contenders do not ask in step); while leading, renew it
 * every retry period, and step down when no renewal has succeeded within the renew deadline; told to step aside or to
 * stop with the Lease let go, release it; after leading, wait a retry period (and the step aside), then contend again.
 * Each try reads the Lease (creating it where it does not exist), decides what to write of it ({@link LeaseRecord#next})
 * and writes it.
 *
 * <p>No thread and no I/O here, and the time is given: {@link #next} says what to do now (ask the API server something,
 * or wait until a moment), {@link #answered} takes what came of it. {@link LeaseElection}'s thread drives it against
 * the API server; the simulation drives this very loop against its own, on its own clock. Whoever drives it asks for
 * the next step only once the request it was told to send is answered (or has gone unanswered for a request's time).
 * What the gate reads of it ({@link #state()}) and the two flags that end a wait ({@link #stepAside}, {@link #stop})
 * may be touched from any thread.
 */
public final class LeaseLoop {

    private static final Logger LOG = Logger.getLogger(LeaseElection.class);
    /** client-go's: a contender waits a retry period and up to 1.2 more between attempts to take the Lease. */
    private static final double JITTER = 1.2;

    /** What to do next. */
    public sealed interface Next {

        /** Nothing until {@code until}, unless told to step aside or stop meanwhile: then ask again at once. */
        record Wait(Moment until) implements Next {
        }

        /** Send {@code request} to the API server, and give its answer to {@link #answered}. */
        record Ask(Request request) implements Next {
        }

        /** The loop has ended: it was told to stop. */
        record Done() implements Next {
        }
    }

    /** A request to the API server about the Lease. */
    public sealed interface Request {

        record Get() implements Request {
        }

        record Create(LeaseRecord record) implements Request {
        }

        /** {@code record} written over the Lease as {@code read}: refused (409) when it changed since. */
        record Update(LeaseStore.Stored read, LeaseRecord record) implements Request {
        }
    }

    /** What came of a request. */
    public sealed interface Answer {

        /** The Lease as read (empty: it does not exist), or as written. */
        record Lease(Optional<LeaseStore.Stored> stored) implements Answer {
        }

        /** The API server refused it. */
        record Refused(LeaseStore.Refused refusal) implements Answer {
        }

        /** No answer: an error on the way, or none within a request's time (a retry period). */
        record Unanswered(String why) implements Answer {
        }
    }

    private enum Phase {
        /** Trying to take the Lease from {@code at} on. */
        ACQUIRING,
        /** Leading: the next renewal at {@code at}, within {@code deadline} of the first that failed. */
        LEADING,
        /** Out of the lead (stepped down, aside, or stopping): the Lease released first where told to. */
        LEFT,
        /** Released, or not: stopped leading; done if stopping, else waiting a retry period. */
        SETTLING,
        /** Waiting a retry period before contending again, until {@code at}. */
        PAUSED,
        /** Staying out after stepping aside, until the state's {@code asideUntil}. */
        ASIDE,
        DONE
    }

    /** The request in flight, whose answer {@link #answered} takes. */
    private enum InFlight {
        NONE, READ, CREATE, WRITE, RELEASE
    }

    private final LeaseElection.Settings settings;
    private final Clock wall;
    private final DoubleSupplier random;
    private final AtomicReference<LeaseState> state;
    private final AtomicBoolean stopped = new AtomicBoolean();
    /** Set by {@link #stepAside} and {@link #stop}: the loop lets the Lease go. */
    private final AtomicBoolean letGo = new AtomicBoolean();
    /** Whether the Lease's absence, or a refusal to read it, was logged since a read last found it. */
    private boolean warnedUnusable;
    /** Whether a request that got no answer was logged since the API server last answered. */
    private boolean warnedUnanswered;
    /** The Lease as this warden last read or wrote it, and when (on its clock) it first saw it so. */
    private Optional<LeaseStore.Stored> observed = Optional.empty();
    private Moment observedAt;
    /** The holder last reported to the log and the state: client-go's maybeReportTransition. */
    private Optional<String> reported = Optional.empty();
    private Phase phase = Phase.ACQUIRING;
    private Moment at;
    /** While leading and a renewal has failed: when the lead ends unless one succeeds. */
    private Optional<Moment> deadline = Optional.empty();
    private InFlight inFlight = InFlight.NONE;
    /** A try's write, decided from its read, to be sent next. */
    private Optional<Request> queued = Optional.empty();
    /** When the try in progress was begun (its read sent), and when its write was sent. */
    private Moment tryAsked;
    private Moment writeSent;
    /** Where the Lease is, for messages: {@code namespace/name}. */
    private String where;

    /**
     * @param random the jitter's draws, in [0, 1)
     */
    public LeaseLoop(LeaseElection.Settings settings, Moment now, Clock wall, DoubleSupplier random) {
        this.settings = settings;
        this.wall = wall;
        this.random = random;
        this.state = new AtomicReference<>(LeaseState.initial(now));
        this.observedAt = now;
        this.at = now;
        this.where = settings.name();
    }

    /** Where this warden stands, as one value (any thread). */
    public LeaseState state() {
        return state.get();
    }

    void update(UnaryOperator<LeaseState> change) {
        state.updateAndGet(change);
    }

    /**
     * The loop begins, at {@code now}, on the Lease {@code where} ({@code namespace/name}, for messages): the election
     * counts as undecided until its first answer.
     */
    public void began(Moment now, String where) {
        this.where = where;
        state.updateAndGet(s -> s.began(now));
        at = now;
    }

    /** Whether the loop contends: neither told to stop nor to step aside (any thread). */
    public boolean contending() {
        return !stopped.get() && !letGo.get();
    }

    public boolean stopped() {
        return stopped.get();
    }

    /**
     * Releases the Lease (at the next step) and stays out until {@code until}, longer than another contender's jittered
     * retry, so that one takes it; any thread. A wait in progress should end at once.
     */
    public void stepAside(Moment until) {
        state.updateAndGet(s -> s.asideUntil(until));
        letGo.set(true);
    }

    /** Stops; with {@code release} the Lease is released first (else it expires as if this warden had died); any thread. */
    public void stop(boolean release) {
        letGo.set(release);
        stopped.set(true);
        state.updateAndGet(LeaseState::stoppedLeading);
    }

    /** What to do now. Never while a request is unanswered. */
    public Next next(Moment now) {
        if (inFlight != InFlight.NONE) {
            throw new IllegalStateException("the Lease loop's " + inFlight + " is unanswered");
        }
        if (queued.isPresent()) {
            Request write = queued.get();
            queued = Optional.empty();
            inFlight = write instanceof Request.Create ? InFlight.CREATE : InFlight.WRITE;
            return new Next.Ask(write);
        }
        while (true) {
            switch (phase) {
                case ACQUIRING, LEADING -> {
                    if (!contending()) {
                        phase = Phase.LEFT;
                        continue;
                    }
                    if (now.isBefore(at)) {
                        return new Next.Wait(at);
                    }
                    if (phase == Phase.LEADING && deadline.isEmpty()) {
                        deadline = Optional.of(now.plus(settings.renewDeadline()));
                    }
                    tryAsked = now;
                    state.updateAndGet(s -> s.asked(now));
                    inFlight = InFlight.READ;
                    return new Next.Ask(new Request.Get());
                }
                case LEFT -> {
                    phase = Phase.SETTLING;
                    Optional<LeaseStore.Stored> last = observed;
                    // Only a leader told to (stepping aside, or stopping with its lilbee stopped) lets the Lease go. One
                    // that stepped down at the renew deadline leaves it to expire: another takes it a Lease duration
                    // after its last renewal, not a renew deadline, and the difference is the time its lilbee has to stop
                    // after its permit ran out.
                    if (letGo.getAndSet(false) && last.isPresent()
                            && last.get().record().holder().equals(Optional.of(settings.identity()))) {
                        inFlight = InFlight.RELEASE;
                        return new Next.Ask(new Request.Update(last.get(), last.get().record().released(wall.instant())));
                    }
                }
                case SETTLING -> {
                    state.updateAndGet(LeaseState::stoppedLeading);
                    if (stopped.get()) {
                        phase = Phase.DONE;
                        continue;
                    }
                    phase = Phase.PAUSED;
                    at = now.plus(settings.retryPeriod());
                }
                case PAUSED -> {
                    if (contending() && now.isBefore(at)) {
                        return new Next.Wait(at);
                    }
                    phase = Phase.ASIDE;
                }
                case ASIDE -> {
                    Optional<Moment> aside = state.get().asideUntil();
                    if (contending() && aside.isPresent() && now.isBefore(aside.get())) {
                        return new Next.Wait(aside.get());
                    }
                    state.updateAndGet(LeaseState::backIn);
                    phase = Phase.ACQUIRING;
                    at = now;
                }
                case DONE -> {
                    return new Next.Done();
                }
            }
        }
    }

    /** What came of the request {@link #next} asked for, at {@code now}. */
    public void answered(Answer answer, Moment now) {
        InFlight was = inFlight;
        inFlight = InFlight.NONE;
        switch (was) {
            case NONE -> throw new IllegalStateException("no request of the Lease loop is in flight");
            case RELEASE -> released(answer);
            case READ -> read(answer, now);
            case CREATE -> {
                if (answer instanceof Answer.Refused refused && refused.refusal().status() == 403) {
                    apiServerAnswers();
                    state.updateAndGet(LeaseState::failed);
                    warnUnusable("does not exist, and this warden may not create it (its Role allows get and update on"
                            + " that one Lease): helm upgrade creates it again, or create it with kubectl,"
                            + " spec.leaseDurationSeconds " + settings.duration().toSeconds());
                    tried(false, now);
                } else {
                    wrote(answer, tryAsked, now);
                }
            }
            case WRITE -> wrote(answer, writeSent, now);
        }
    }

    /** A try's read answered: the Lease created where there is none, else what to write of it decided. */
    private void read(Answer answer, Moment now) {
        if (!(answer instanceof Answer.Lease lease)) {
            failed(answer);
            tried(false, now);
            return;
        }
        apiServerAnswers();
        if (lease.stored().isEmpty()) {
            queued = Optional.of(new Request.Create(LeaseRecord.first(settings.identity(), settings.duration(), wall.instant())));
            return;
        }
        warnedUnusable = false;
        LeaseStore.Stored read = lease.stored().get();
        LeaseRecord record = read.record();
        state.updateAndGet(s -> s.read(record.holder(), record.renewTime(), settings.identity()));
        if (observed.map(o -> !o.record().equals(record)).orElse(true)) {
            observedAt = now;
        }
        observed = lease.stored();
        report(record.holder());
        Optional<LeaseRecord> next = record.next(settings.identity(), settings.duration(), observedAt, now, wall.instant());
        if (next.isEmpty()) {
            tried(false, now);
            return;
        }
        writeSent = now;
        state.updateAndGet(s -> s.asked(now));
        queued = Optional.of(new Request.Update(read, next.get()));
    }

    /** A try's write answered, sent at {@code sent}. */
    private void wrote(Answer answer, Moment sent, Moment now) {
        if (!(answer instanceof Answer.Lease lease) || lease.stored().isEmpty()) {
            failed(answer);
            tried(false, now);
            return;
        }
        apiServerAnswers();
        LeaseStore.Stored stored = lease.stored().get();
        LeaseRecord record = stored.record();
        observed = lease.stored();
        observedAt = now;
        state.updateAndGet(s -> s.accepted(record.holder().orElse(""), record.renewTime(), settings.identity(), sent));
        report(record.holder());
        tried(record.holder().filter(settings.identity()::equals).isPresent(), now);
    }

    /** A request refused, or unanswered: nothing learnt of the Lease. */
    private void failed(Answer answer) {
        state.updateAndGet(LeaseState::failed);
        switch (answer) {
            case Answer.Refused refused -> {
                apiServerAnswers();
                LeaseStore.Refused e = refused.refusal();
                if (e.status() == 403) {
                    warnUnusable("may not be " + e.what() + " by this warden: its Role allows another Lease"
                            + " (warden.gate.lease.name must name the Lease the chart made)");
                } else if (e.status() != 409) {
                    LOG.debugf("%s", e.getMessage());
                }
            }
            case Answer.Unanswered unanswered -> {
                if (!warnedUnanswered) {
                    warnedUnanswered = true;
                    LOG.warnf("The API server did not answer for the Lease %s (%s); asking again every %d s", where,
                            unanswered.why(), settings.retryPeriod().toSeconds());
                }
            }
            case Answer.Lease lease -> {
                // a write answered without the Lease: nothing to learn
            }
        }
    }

    /** A try's end: this warden holds the Lease now ({@code won}), or not. */
    private void tried(boolean won, Moment now) {
        Moment retry = now.plus(settings.retryPeriod());
        if (phase == Phase.ACQUIRING) {
            if (won) {
                state.updateAndGet(s -> s.startedLeading(settings.identity()));
                LOG.infof("Holding the Lease %s as %s", settings.name(), settings.identity());
                phase = Phase.LEADING;
                at = retry;
                deadline = Optional.empty();
            } else {
                long jitter = (long) (random.getAsDouble() * JITTER * settings.retryPeriod().toNanos());
                at = retry.plus(Duration.ofNanos(jitter));
            }
            return;
        }
        if (won) {
            at = retry;
            deadline = Optional.empty();
        } else if (contending() && retry.isBefore(deadline.orElse(now))) {
            at = retry;
        } else {
            if (contending()) {
                LeaseState before = state.getAndUpdate(LeaseState::stoppedLeading);
                if (before.leading()) {
                    LOG.warnf("Stepped down: the Lease %s was not renewed within %d s", settings.name(),
                            settings.renewDeadline().toSeconds());
                }
            }
            deadline = Optional.empty();
            phase = Phase.LEFT;
        }
    }

    /** The release answered: the Lease names nobody now, or it expires instead. */
    private void released(Answer answer) {
        if (answer instanceof Answer.Lease lease && lease.stored().isPresent()) {
            observed = lease.stored();
            report(Optional.empty());
        } else {
            String why = switch (answer) {
                case Answer.Refused refused -> refused.refusal().getMessage();
                case Answer.Unanswered unanswered -> unanswered.why();
                case Answer.Lease lease -> "no Lease in the answer";
            };
            LOG.infof("The Lease %s could not be released (%s): it expires instead", settings.name(), why);
        }
    }

    private void apiServerAnswers() {
        if (warnedUnanswered) {
            warnedUnanswered = false;
            LOG.infof("The API server answers for the Lease %s again", where);
        }
    }

    /** The holder seen changed: logged once per change, as client-go reports a new leader. */
    private void report(Optional<String> holder) {
        if (holder.equals(reported)) {
            return;
        }
        reported = holder;
        state.updateAndGet(s -> s.newLeader(holder));
        holder.filter(h -> !h.equals(settings.identity()))
                .ifPresent(h -> LOG.infof("The Lease %s is held by %s", settings.name(), h));
    }

    /** Logged once until a read finds the Lease again; the loop retries every retry period meanwhile. */
    private void warnUnusable(String what) {
        if (!warnedUnusable) {
            warnedUnusable = true;
            LOG.warnf("The Lease %s %s. This warden does not lead until then.", where, what);
        }
    }
}
