package dev.warden.gate;

import dev.warden.gate.GateAction.Word;
import dev.warden.gate.GatePhase.Elected;
import dev.warden.gate.GatePhase.Leaving;
import dev.warden.gate.GatePhase.Proven;
import dev.warden.gate.GatePhase.Standby;
import dev.warden.gate.GatePhase.Watch;
import dev.warden.lock.FileId;
import dev.warden.lock.LockProbe;
import dev.warden.time.Moment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The gate, decided: one pure function from where this warden stands and one round's look at the world to where it
 * stands next, what it does, and why, in the sentence the log and the status show. No I/O and no clock here: the
 * gate keeper observes and acts, the simulation drives the very same function.
 *
 * <p>What keeps two lilbees apart, each in one method below:
 * <ul>
 *   <li>{@link #whyNotElected}: a pod's lilbee may run only while its warden holds the gate lock on the file at the
 *       path (and, in lease mode, leads the Lease). Its supervisor keeps that very lock (its open file, passed with the
 *       permit) for as long as lilbee lives, and lilbee dies with the supervisor, so the gate stays locked until it is
 *       gone: the kernel elects nobody else before. One exception, {@link #leavingNow}: a warden that stepped down
 *       unlocks it for its serving lilbee once that one has let server.lock go.
 *   <li>{@link #settleAtElection}: the one way around that is a gate file replaced (a reset deletes it, any writer of
 *       the data dir can rename it), which leaves another pod's lilbee on the old one. Elected on a file it has not
 *       watched at the path for {@link GateTimings#settle()}, a pod waits until that long after it first saw it: by
 *       then that lilbee's permit has run out and its supervisor (or the kubelet) has stopped it.
 *   <li>{@link #word}: what the supervisor is told; a permit never outlasts {@link GateTimings#permit()}, nor in lease
 *       mode the lead; a lilbee proven on a file no longer at the path, or proven on none long after its start, is
 *       stopped; none starts while another process holds server.lock.
 * </ul>
 *
 * <p>Not final only so that the simulation's mutation test can undo one rule at a time and show the split brain it
 * keeps out (GateMutationSoak).
 */
public class GateDecision {

    /** How long a warden that handed over holds back once nothing of its pod holds the gate: see {@link #holdBackUntil}. */
    static final Duration HOLD_BACK_AFTER_STOP = Duration.ofSeconds(1);

    private final GateTimings timings;

    public GateDecision(GateTimings timings) {
        this.timings = timings;
    }

    /**
     * One round's decision.
     *
     * @param outcome what the round came to, as a type: what Events, log levels and metrics are chosen by
     * @param cause while not elected, why not
     * @param reason the same in a sentence, for a person (the log, the status, an Event's message)
     * @param lilbee what became of this pod's lilbee, for the status
     * @param settled whether an election now would let this pod's lilbee start at once: it has watched the gate file at
     *     the path for the settle (or elects by a Lease)
     */
    public record Step(GatePhase phase, List<GateAction> actions, GateOutcome outcome, Optional<GateOutcome.Cause> cause,
            String reason, Lilbee lilbee, Word word, boolean settled) {

        /** Whether this pod serves: elected, its lilbee proven on the server.lock at the path and allowed to run. */
        public boolean serving() {
            return phase instanceof Elected && lilbee.state() == LilbeeState.SERVING && word instanceof Word.Go;
        }

        /**
         * Whether the log says this round as a warning: the election lost, or a lilbee of this pod told to stop (fenced
         * while elected, or running while not).
         */
        public boolean warns() {
            return outcome == GateOutcome.NOT_ELECTED_ANY_MORE
                    || word instanceof Word.Stop && lilbee.state() != LilbeeState.NONE;
        }

        /** Whether the log says this round after {@code before} (null before the first): what it came to has changed. */
        public boolean isNewsAfter(Step before) {
            return before == null || outcome != before.outcome || !cause.equals(before.cause) || !lilbee.equals(before.lilbee);
        }
    }

    /** Why a warden is not elected: the type, and the sentence that says it. */
    record NotElected(GateOutcome.Cause cause, String why) {
    }

    /** This pod's lilbee as the decision sees it. */
    public record Lilbee(LilbeeState state, long pid) {
        static final Lilbee NONE = new Lilbee(LilbeeState.NONE, 0);
    }

    public enum LilbeeState {
        /** No lilbee runs under this pod's supervisor (or no supervisor is connected). */
        NONE,
        /** Started within {@link GateTimings#LILBEE_START_BOUND} and holding no lock on server.lock yet. */
        STARTING,
        /** Holds an exclusive flock on the server.lock at the path, under the gate lock this warden holds. */
        SERVING,
        /**
         * Runs under another gate file's lock than the one this warden holds, or under none (its supervisor holds that
         * one for it: it was started under a gate file since replaced): it no longer keeps the gate locked while it lives.
         */
        UNDER_ANOTHER_GATE,
        /** Proven on a server.lock that is no longer the file at the path. */
        ON_REPLACED_FILE,
        /** Running longer than a start takes, holding no lock on the server.lock at the path. */
        UNPROVEN
    }

    public Step step(GatePhase phase, Observation seen) {
        Moment now = seen.now();
        Watch watch = phase.watch().next(seen.gateAtPath(), now);
        // A permit is never longer than one given now: a report of a later end is capped there (a supervisor says what
        // it holds, and a forged end would keep the Lease for ever).
        Moment permitsEnd = seen.supervisor().permit().map(p -> Moment.earliest(p, now.plus(timings.permit())))
                .filter(phase.permitsEnd()::isBefore).orElse(phase.permitsEnd());
        if (seen.lease().isPresent() && !seen.lease().get().decided()) {
            // Restarted beside a lilbee its previous run let start: not a word until the Lease says whether it still
            // leads. The permit given before runs out on its own, in time for any other leader.
            return new Step(new Standby(watch, since(phase, now), permitsEnd, since(phase, now)),
                    List.of(new GateAction.Say(new Word.Silent())), GateOutcome.ASKING_THE_LEASE, Optional.empty(),
                    "asking the API server whether the Lease " + seen.lease().get().name() + " names this warden",
                    lilbee(Optional.empty(), seen, now), new Word.Silent(), settled(watch, seen));
        }
        Optional<NotElected> notElected = whyNotElected(seen);
        if (notElected.isPresent()) {
            return standBy(phase, watch, seen, notElected.get(), permitsEnd);
        }
        return whileElected(phase, watch, seen, permitsEnd);
    }

    /**
     * Whether the Lease may be let go now: every permit this warden gave (or its supervisor holds) has ended, and the
     * longest a lilbee outlives its permit has passed. A Lease released sooner passes to another node at once, while
     * this pod's lilbee may still serve here (a warden SIGTERMed while its last permit runs is the usual case).
     */
    public boolean mayLetTheLeaseGo(GatePhase phase, Moment now) {
        return !now.isBefore(phase.permitsEnd().plus(timings.overrun()));
    }

    /**
     * Empty when this warden is elected; else why not, as the status says it. A warden restarted beside the lilbee its
     * previous run started is elected once it holds the gate lock again: its supervisor gives back the descriptor it
     * kept, to the warden it believes, and warden takes it only as the open file that holds the gate's lock.
     */
    Optional<NotElected> whyNotElected(Observation seen) {
        Optional<Observation.Lease> lease = seen.lease();
        if (lease.isPresent() && !lease.get().leading(seen.now())) {
            return Optional.of(new NotElected(GateOutcome.Cause.NO_LEASE, "this warden does not lead the Lease "
                    + lease.get().name() + " (another holds it, or it was not renewed within the renew deadline)"));
        }
        return switch (seen.gate()) {
            case Observation.Gate.Held held when held.atPath() -> Optional.empty();
            case Observation.Gate.Held held -> Optional.of(new NotElected(GateOutcome.Cause.GATE_REPLACED, "the gate file"
                    + " this warden holds was deleted or replaced (a lilbee reset, or a writer of the data dir)"));
            case Observation.Gate.Lost lost -> Optional.of(new NotElected(GateOutcome.Cause.GATE_LOST, "the gate lock this"
                    + " warden held is gone: a process with a descriptor of its open file unlocked it (this pod's lilbee, or"
                    + " one that took the descriptor from it), and another pod may be elected already"));
            case Observation.Gate.NotHeld notHeld -> Optional.of(new NotElected(GateOutcome.Cause.HELD_ELSEWHERE,
                    "another warden holds the gate"));
            case Observation.Gate.Unproven unproven -> Optional.of(new NotElected(GateOutcome.Cause.UNPROVEN, unproven.why()));
            // The volume cannot lock: where the Lease elects, it elects alone.
            case Observation.Gate.Unlockable unlockable when lease.isPresent() -> Optional.empty();
            case Observation.Gate.Unlockable unlockable -> Optional.of(new NotElected(GateOutcome.Cause.UNLOCKABLE,
                    unlockable.why()));
        };
    }

    private Step standBy(GatePhase phase, Watch watch, Observation seen, NotElected why, Moment permitsEnd) {
        List<GateAction> actions = new ArrayList<>();
        if (seen.gate() instanceof Observation.Gate.Held || seen.gate() instanceof Observation.Gate.Lost) {
            actions.add(new GateAction.ReleaseGate());
        }
        Optional<Leaving> leaving = phase instanceof Standby standby ? standby.leaving() : Optional.empty();
        Moment contendFrom = phase instanceof Standby standby ? standby.contendFrom() : seen.now();
        if (leaving.isPresent()) {
            switch (leavingNow(leaving.get(), seen)) {
                case DONE_SERVING -> {
                    actions.add(new GateAction.UnlockGate());
                    leaving = Optional.empty();
                    // Nothing of this pod holds the gate from here: held back as after its lilbee's exit.
                    contendFrom = Moment.earliest(contendFrom, seen.now().plus(HOLD_BACK_AFTER_STOP));
                }
                case GONE -> {
                    actions.add(new GateAction.ReleaseGate());
                    leaving = Optional.empty();
                }
                case SERVING -> {
                }
            }
        }
        contendFrom = holdBackUntil(contendFrom, seen);
        boolean yielding = seen.now().isBefore(contendFrom);
        if (!yielding && (seen.lease().isEmpty() || seen.lease().get().leading(seen.now()))) {
            actions.add(new GateAction.Contend());
        }
        Word stop = new Word.Stop("not elected: " + why.why());
        actions.add(new GateAction.Say(stop));
        GateOutcome outcome = phase instanceof Elected ? GateOutcome.NOT_ELECTED_ANY_MORE
                : yielding ? GateOutcome.HOLDING_BACK : GateOutcome.STANDING_BY;
        String reason = (phase instanceof Elected ? "not elected any more: " : "standing by: ") + why.why()
                + (yielding ? "; holding back after a handover, so that a standby takes the gate" : "");
        return new Step(new Standby(watch, since(phase, seen.now()), permitsEnd, contendFrom, leaving), actions, outcome,
                Optional.of(why.cause()), reason, lilbee(Optional.empty(), seen, seen.now()), stop, settled(watch, seen));
    }

    /** What became of the lilbee a warden stepped down from. */
    enum LeavingState {
        /** It has server.lock open, or its supervisor is not seen holding the gate lock for it: it may serve still. */
        SERVING,
        /** Its supervisor still holds the gate lock for it, and it has no server.lock open, at the path or the one it
     * served: it serves no more. */
        DONE_SERVING,
        /** That instance is no longer reported (exited, or its supervisor gone): its lock ends with it. */
        GONE
    }

    /**
     * Whether the lilbee this warden stepped down from is done serving. lilbee lets server.lock go last thing in
     * {@code serve}, once its server and its engine have stopped (filelock unlocks it, then closes it), and then only
     * exits; bare lilbee's successor takes over right then, and so may a standby. Done only on a positive look: the
     * same instance seen with no descriptor at all of server.lock, the one it served or the one at the path (a look at
     * its descriptors that failed sees it with one), its supervisor still holding the retired gate's lock for it. A
     * lock gone with its descriptor still open is not enough: a process of lilbee's UID that took a descriptor of it
     * (pidfd_getfd) can unlock it, but not close lilbee's.
     */
    LeavingState leavingNow(Leaving leaving, Observation seen) {
        Optional<Observation.Lilbee> running = seen.supervisor().lilbee()
                .filter(l -> l.pid() == leaving.lilbee().pid() && l.startTicks() == leaving.lilbee().startTicks());
        if (running.isEmpty()) {
            return LeavingState.GONE;
        }
        Set<FileId> opens = running.get().opens();
        boolean onServer = opens.contains(leaving.lilbee().file()) || seen.server().atPath().filter(opens::contains).isPresent();
        boolean underIt = seen.supervisor().gate().equals(Optional.of(leaving.gate()));
        return !onServer && underIt ? LeavingState.DONE_SERVING : LeavingState.SERVING;
    }

    private Step whileElected(GatePhase phase, Watch watch, Observation seen, Moment permitsBefore) {
        Moment now = seen.now();
        Elected before = phase instanceof Elected elected ? elected : null;
        Optional<Proven> proven = before == null ? Optional.empty() : before.proven();
        Lilbee lilbee = lilbee(proven, seen, now);
        if (lilbee.state() == LilbeeState.SERVING) {
            proven = Optional.of(new Proven(lilbee.pid(), seen.supervisor().lilbee().orElseThrow().startTicks(),
                    seen.server().atPath().orElseThrow()));
        } else if (lilbee.state() == LilbeeState.NONE) {
            proven = Optional.empty();
        }
        if (before != null && seen.stepDown().filter(asked -> !asked.isBefore(before.since())).isPresent()) {
            return stepDown(before, watch, seen, lilbee, proven, permitsBefore);
        }
        Moment since = before == null ? now : before.since();
        Optional<Moment> settleUntil = before == null ? settleAtElection(watch, seen, lilbee) : before.settleUntil();
        boolean settled = settleUntil.map(until -> !now.isBefore(until)).orElse(true);
        Optional<Moment> unservedSince = lilbee.state() == LilbeeState.SERVING || !settled ? Optional.empty()
                : before != null && before.unservedSince().isPresent() ? before.unservedSince() : Optional.of(now);
        if (unservedSince.isPresent() && handsOver(now.since(unservedSince.get())) && lilbee.state() == LilbeeState.NONE) {
            Duration unserved = now.since(unservedSince.get());
            if (seen.lease().isEmpty() || !now.isBefore(permitsBefore.plus(timings.overrun()))) {
                return handOver(watch, seen, unserved, permitsBefore);
            }
            // The Lease goes only once no permit given can still start or keep a lilbee: stop giving them meanwhile.
            Word stop = new Word.Stop("handing the gate over once the last permit given has run out, in "
                    + permitsBefore.plus(timings.overrun()).since(now).toMillis() + " ms");
            return new Step(new Elected(watch, since, settleUntil, proven, unservedSince, permitsBefore),
                    List.of(new GateAction.Say(stop)), GateOutcome.HANDING_OVER, Optional.empty(), "this pod has not served"
                            + " for " + unserved.toMillis() + " ms while elected: handing the gate over once no permit given"
                            + " can be used", lilbee, stop, settled(watch, seen));
        }
        Said said = word(seen, lilbee, settleUntil, since, now);
        Word word = said.word();
        List<GateAction> actions = List.of(new GateAction.Say(word));
        Moment permitsEnd = permitsBefore;
        if (word instanceof Word.Start start && permitsEnd.isBefore(start.until())) {
            permitsEnd = start.until();
        } else if (word instanceof Word.Go go && permitsEnd.isBefore(go.until())) {
            permitsEnd = go.until();
        }
        Elected next = new Elected(watch, since, settleUntil, proven, unservedSince, permitsEnd);
        return new Step(next, actions, said.outcome(), Optional.empty(),
                reason(before == null, word, lilbee, seen), lilbee, word, settled(watch, seen));
    }

    /** Whether an elected pod that has run no lilbee for {@code unserved} lets the gate go to a standby. */
    boolean handsOver(Duration unserved) {
        return unserved.compareTo(timings.handoverAfter()) >= 0;
    }

    /**
     * Whether an election must wait before this pod's first lilbee starts, and until when: not when this pod's lilbee
     * already holds the server.lock at the path (it runs on this gate's lock already, left by this warden's previous
     * run), nor in lease mode (a Lease passes only after its holder's lead, and with it every permit it gave, has
     * ended); otherwise until the gate file has been watched at the path for a settle. Another pod's lilbee runs under
     * the gate lock for its whole life, so the kernel elected nobody while it lived, unless the file was replaced: then
     * its warden stops saying it may run (or is gone, and its last permit runs out), and it is stopped within
     * {@link GateTimings#overrun()} of that, all within the settle of the replacement.
     */
    Optional<Moment> settleAtElection(Watch watch, Observation seen, Lilbee lilbee) {
        if (lilbee.state() == LilbeeState.SERVING || settled(watch, seen)) {
            return Optional.empty();
        }
        return Optional.of(watch.since().plus(timings.settle()));
    }

    /** Whether an election now needs no settle: the gate file has been watched at the path for it, or a Lease elects. */
    private boolean settled(Watch watch, Observation seen) {
        return seen.lease().isPresent() || watch.age(seen.now()).compareTo(timings.settle()) >= 0;
    }

    /**
     * This pod's lilbee: the instance its supervisor reports, proven or not on the file at the path, and run under the
     * gate lock this warden holds (its supervisor holds it for it from its start), or not.
     *
     * @param proven the instance and file proven in an earlier round
     */
    Lilbee lilbee(Optional<Proven> proven, Observation seen, Moment now) {
        Optional<Observation.Lilbee> running = seen.supervisor().lilbee();
        if (running.isEmpty()) {
            return Lilbee.NONE;
        }
        Observation.Lilbee look = running.get();
        if (seen.gate() instanceof Observation.Gate.Held held && !seen.supervisor().gate().equals(Optional.of(held.file()))) {
            return new Lilbee(LilbeeState.UNDER_ANOTHER_GATE, look.pid());
        }
        Optional<FileId> atPath = seen.server().atPath();
        if (atPath.isPresent() && look.holds().contains(atPath.get())) {
            return new Lilbee(LilbeeState.SERVING, look.pid());
        }
        boolean sameInstance = proven.filter(p -> p.pid() == look.pid() && p.startTicks() == look.startTicks()).isPresent();
        if (sameInstance && look.holds().contains(proven.get().file())) {
            return new Lilbee(LilbeeState.ON_REPLACED_FILE, look.pid());
        }
        // A start reported later than now is taken as now: a supervisor's word cannot make a start last for ever.
        Moment launched = Moment.earliest(look.launched(), now);
        if (now.since(launched).compareTo(GateTimings.LILBEE_START_BOUND) < 0 && !sameInstance) {
            return new Lilbee(LilbeeState.STARTING, look.pid());
        }
        return new Lilbee(LilbeeState.UNPROVEN, look.pid());
    }

    /**
     * What this pod's supervisor is told while this warden is elected. A running lilbee that serves (or is starting)
     * goes on until the permit's end; one that serves a file no longer at the path, or holds none long after its
     * start, is stopped (its supervisor starts another when told it may). None starts before the settle, nor while
     * another process holds server.lock (it would wait for it, and exit 3).
     */
    Said word(Observation seen, Lilbee lilbee, Optional<Moment> settleUntil, Moment electedAt, Moment now) {
        Moment until = permitEnd(seen, now);
        return switch (lilbee.state()) {
            case SERVING -> new Said(new Word.Go(until), GateOutcome.SERVING);
            case STARTING -> new Said(new Word.Go(until), GateOutcome.STARTING);
            case ON_REPLACED_FILE -> new Said(new Word.Stop("this pod's lilbee (pid " + lilbee.pid() + ") holds a server.lock"
                    + " that is no longer the file at the path (a reset, or a writer of the data dir): stopped, to start again"
                    + " on it"), GateOutcome.FENCING);
            case UNPROVEN -> new Said(new Word.Stop("this pod's lilbee (pid " + lilbee.pid() + ") has run for longer than a"
                    + " start takes and holds no lock on the server.lock at the path: stopped, to start again on it"),
                    GateOutcome.FENCING);
            case UNDER_ANOTHER_GATE -> new Said(new Word.Stop("this pod's lilbee (pid " + lilbee.pid() + ") holds the lock of"
                    + " a gate file since replaced, not this warden's: stopped, to start again under the gate this warden"
                    + " holds"), GateOutcome.FENCING);
            case NONE -> {
                if (settleUntil.isPresent() && now.isBefore(settleUntil.get())) {
                    yield new Said(new Word.Stop("settling: lilbee may start " + settleUntil.get().since(electedAt).toMillis()
                            + " ms after this warden was elected, as the gate file is new to it and a pod whose gate file was"
                            + " replaced may still run a lilbee on the old one"), GateOutcome.SETTLING);
                }
                if (seen.server().failure().isPresent()) {
                    yield new Said(new Word.Stop(seen.server().failure().get()), GateOutcome.SERVER_LOCK_FAILED);
                }
                Optional<LockProbe> probe = seen.server().probe();
                if (probe.isEmpty()) {
                    yield new Said(new Word.Stop("looking at server.lock before lilbee may start"), GateOutcome.LOOKING);
                }
                if (probe.get() == LockProbe.HELD) {
                    yield new Said(new Word.Stop("server.lock is held by a process that is not this pod's lilbee (a stray"
                            + " server, or another pod's on a replaced gate file): lilbee would wait for it and exit 3"),
                            GateOutcome.SERVER_LOCK_HELD);
                }
                yield new Said(new Word.Start(until), GateOutcome.MAY_START);
            }
        };
    }

    /** What the supervisor is told while elected, and what the round comes to with it. */
    record Said(Word word, GateOutcome outcome) {
    }

    /** The end of a permit given now: {@link GateTimings#permit()} from now, and never past the end of the lead. */
    Moment permitEnd(Observation seen, Moment now) {
        Moment end = now.plus(timings.permit());
        Optional<Moment> lead = seen.lease().flatMap(Observation.Lease::leadingUntil);
        return lead.map(l -> Moment.earliest(l, end)).orElse(end);
    }

    /**
     * The elected pod has not served for {@link GateTimings#handoverAfter()} and no lilbee of it runs (its container
     * is down, in the kubelet's back-off, or lilbee keeps failing): the gate goes to a standby, whose lilbee may serve.
     */
    private Step handOver(Watch watch, Observation seen, Duration unserved, Moment permitsEnd) {
        Word stop = new Word.Stop("handing the gate over: this pod has not served for " + unserved.toMillis() + " ms");
        List<GateAction> actions = new ArrayList<>(List.of(new GateAction.Say(stop), new GateAction.ReleaseGate()));
        if (seen.lease().isPresent()) {
            actions.add(new GateAction.StepAside());
        }
        // Not contending for as long again: a standby waiting for the gate takes it, and with no standby this pod does.
        Moment contendFrom = seen.now().plus(timings.handoverAfter());
        return new Step(new Standby(watch, seen.now(), permitsEnd, contendFrom), actions, GateOutcome.HANDED_OVER,
                Optional.empty(), "this pod has not served for " + unserved.toMillis() + " ms while elected and runs no"
                        + " lilbee: letting the gate go to a standby", Lilbee.NONE, stop, settled(watch, seen));
    }

    /**
     * How long a warden that handed the gate over holds back from contending for it again: until {@code contendFrom}, or
     * {@link #HOLD_BACK_AFTER_STOP} after its supervisor (connected) says no lilbee of it runs and it holds no permit,
     * whichever comes first. Then nothing of this pod holds the gate any more, and a standby waiting for it in the kernel
     * has had it within milliseconds; contending sooner could take it back from a standby about to be woken, later only
     * keeps the gate from the next handover (a switchover back). Contending is always safe: the kernel decides.
     */
    Moment holdBackUntil(Moment contendFrom, Observation seen) {
        Observation.Supervisor supervisor = seen.supervisor();
        Moment soon = seen.now().plus(HOLD_BACK_AFTER_STOP);
        if (supervisor.connected() && supervisor.lilbee().isEmpty() && supervisor.permit().isEmpty() && soon.isBefore(contendFrom)) {
            return soon;
        }
        return contendFrom;
    }

    /**
     * Asked to step down while elected (a switchover, or this pod going away): lilbee is told to stop and the gate goes
     * to a standby, this warden holding back from contending again ({@link #holdBackUntil}) so that a standby waiting
     * for it takes it (with none, this pod does, and serves again). In file mode the gate lock is let go at once: its
     * supervisor holds it (warden passed it on with the permit) until lilbee is gone, so the kernel elects nobody sooner; a
     * serving lilbee's is retired rather than closed, to be unlocked once it has let server.lock go ({@link
     * #leavingNow}). In lease mode the Lease goes once the supervisor says its stop is done, or once no permit given can
     * be used any more.
     */
    private Step stepDown(Elected before, Watch watch, Observation seen, Lilbee lilbee, Optional<Proven> proven,
            Moment permitsEnd) {
        if (!mayLetGoAtStepDown(seen, permitsEnd)) {
            Word stop = new Word.Stop("stepping down, as asked: the Lease goes once lilbee has stopped");
            return new Step(new Elected(watch, before.since(), before.settleUntil(), before.proven(), before.unservedSince(),
                    permitsEnd), List.of(new GateAction.Say(stop)), GateOutcome.STEPPING_DOWN, Optional.empty(),
                    "stepping down, as asked: stopping this pod's lilbee before the Lease goes", lilbee, stop,
                    settled(watch, seen));
        }
        Moment now = seen.now();
        Word stop = new Word.Stop("stepped down, as asked");
        Optional<Leaving> leaving = Optional.empty();
        if (seen.lease().isEmpty() && lilbee.state() == LilbeeState.SERVING && proven.isPresent()
                && seen.gate() instanceof Observation.Gate.Held held) {
            leaving = Optional.of(new Leaving(proven.get(), held.file()));
        }
        List<GateAction> actions = new ArrayList<>(List.of(new GateAction.Say(stop),
                leaving.isPresent() ? new GateAction.RetireGate() : new GateAction.ReleaseGate()));
        if (seen.lease().isPresent()) {
            actions.add(new GateAction.StepAside());
        }
        Moment contendFrom = now.plus(timings.handoverAfter());
        return new Step(new Standby(watch, now, permitsEnd, contendFrom, leaving), actions, GateOutcome.STEPPED_DOWN,
                Optional.empty(), "stepped down, as asked: this pod's lilbee stops and the gate goes to a standby", lilbee,
                stop, settled(watch, seen));
    }

    /**
     * Whether a warden stepping down may let the gate go now: in file mode at once (the supervisor keeps the gate lock
     * until lilbee is gone); in lease mode once its supervisor said its stop is done, or no permit given can be used any
     * more.
     */
    boolean mayLetGoAtStepDown(Observation seen, Moment permitsEnd) {
        return seen.lease().isEmpty() || seen.supervisor().stopDone() || !seen.now().isBefore(permitsEnd.plus(timings.overrun()));
    }

    private static String reason(boolean justElected, Word word, Lilbee lilbee, Observation seen) {
        String prefix = justElected ? "elected: " : "";
        return prefix + switch (word) {
            case Word.Go go when lilbee.state() == LilbeeState.SERVING -> "this pod's lilbee (pid " + lilbee.pid()
                    + ") holds server.lock: serving";
            case Word.Go go -> "this pod's lilbee (pid " + lilbee.pid() + ") is starting";
            case Word.Start start -> (seen.supervisor().connected() ? "" : "no lilbee supervisor connected yet; ")
                    + "lilbee may start: server.lock is free";
            case Word.Stop stop -> stop.reason();
            case Word.Silent silent -> "saying nothing yet";
        };
    }

    private static Moment since(GatePhase phase, Moment now) {
        return phase instanceof Standby standby ? standby.since() : now;
    }
}
