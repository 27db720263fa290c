package dev.warden.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.gate.GateAction.Contend;
import dev.warden.gate.GateAction.ReleaseGate;
import dev.warden.gate.GateAction.RetireGate;
import dev.warden.gate.GateAction.Say;
import dev.warden.gate.GateAction.StepAside;
import dev.warden.gate.GateAction.UnlockGate;
import dev.warden.gate.GateAction.Word;
import dev.warden.gate.GateDecision.LilbeeState;
import dev.warden.gate.GateDecision.Step;
import dev.warden.gate.GatePhase.Elected;
import dev.warden.gate.GatePhase.Proven;
import dev.warden.gate.GatePhase.Standby;
import dev.warden.gate.GatePhase.Watch;
import dev.warden.lock.FileId;
import dev.warden.lock.LockProbe;
import dev.warden.time.Moment;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The gate's decision, table by table, as client-go tests its one decision: a phase and a look at the world in, the
 * next phase, the actions and the word to lilbee's supervisor out. Moments are far apart where only their order
 * matters; nothing sleeps, and nothing here reads a clock.
 */
class GateDecisionTest {

    static final Duration SETTLE = Duration.ofSeconds(10);
    static final Duration PERMIT = Duration.ofSeconds(5);
    static final Duration HANDOVER = Duration.ofSeconds(10);
    static final GateTimings FILE = new GateTimings(SETTLE, PERMIT, Duration.ofSeconds(2), Duration.ofSeconds(4), HANDOVER,
            Optional.empty());
    static final GateTimings LEASE = new GateTimings(SETTLE, PERMIT, Duration.ofSeconds(2), Duration.ofSeconds(4), HANDOVER,
            Optional.of(new GateTimings.Lease(Duration.ofSeconds(15), Duration.ofSeconds(10), Duration.ofSeconds(2))));

    static final FileId GATE = new FileId(42, 100);
    static final FileId NEW_GATE = new FileId(42, 101);
    static final FileId SERVER = new FileId(42, 200);
    static final FileId OLD_SERVER = new FileId(42, 199);
    static final Moment NOW = at(600_000);

    static Moment at(long millis) {
        return new Moment(millis * 1_000_000);
    }

    /** A look at the world: the elected pod's, with the gate held on the file at the path and nothing else going on. */
    static Observation seen() {
        return new Observation(NOW, new Observation.Gate.Held(GATE, true), Optional.empty(), Optional.of(GATE),
                new Observation.Server(Optional.of(SERVER), Optional.of(LockProbe.FREE), Optional.empty()),
                new Observation.Supervisor(true, Optional.empty()));
    }

    static Observation with(Observation o, Observation.Gate gate) {
        return new Observation(o.now(), gate, o.lease(), o.gateAtPath(), o.server(), o.supervisor());
    }

    static Observation with(Observation o, Observation.Server server) {
        return new Observation(o.now(), o.gate(), o.lease(), o.gateAtPath(), server, o.supervisor());
    }

    static Observation with(Observation o, Observation.Supervisor supervisor) {
        return new Observation(o.now(), o.gate(), o.lease(), o.gateAtPath(), o.server(), supervisor);
    }

    static Observation with(Observation o, Observation.Lease lease) {
        return new Observation(o.now(), o.gate(), Optional.of(lease), o.gateAtPath(), o.server(), o.supervisor());
    }

    /**
     * This pod's lilbee, running: {@code holds} lists the server.lock files it holds, and the gate file (GATE or
     * NEW_GATE) its supervisor holds the lock of for it, if either is among them.
     */
    static Observation lilbee(Observation o, long pid, Moment launched, FileId... holds) {
        Set<FileId> files = new java.util.HashSet<>(Set.of(holds));
        Optional<FileId> gate = Stream.of(GATE, NEW_GATE).filter(files::remove).findFirst();
        return new Observation(o.now(), o.gate(), o.lease(), o.gateAtPath(),
                new Observation.Server(o.server().atPath(), Optional.empty(), Optional.empty()),
                new Observation.Supervisor(true, Optional.of(new Observation.Lilbee(pid, 7, launched, Set.copyOf(files))),
                        Optional.empty(), false, gate));
    }

    static Observation at(Observation o, Moment now) {
        return new Observation(now, o.gate(), o.lease(), o.gateAtPath(), o.server(), o.supervisor());
    }

    /** Standing by, having watched the gate file for longer than a settle. */
    static GatePhase longStandby() {
        return new Standby(new Watch(Optional.of(GATE), at(0)), at(0), at(0));
    }

    /** Elected long ago, settled, nothing proven. */
    static Elected elected() {
        return new Elected(new Watch(Optional.of(GATE), at(0)), at(1000), Optional.empty(), Optional.empty(), Optional.empty(),
                at(0));
    }

    record Row(String name, GateTimings timings, GatePhase phase, Observation seen, Class<?> nextPhase,
            Class<? extends Word> word, List<Class<? extends GateAction>> actions, GateOutcome outcome, String reason) {
        @Override
        public String toString() {
            return name;
        }
    }

    static Row row(String name, GatePhase phase, Observation seen, Class<?> next, Class<? extends Word> word,
            List<Class<? extends GateAction>> actions, GateOutcome outcome, String reason) {
        return new Row(name, FILE, phase, seen, next, word, actions, outcome, reason);
    }

    static Row lease(String name, GatePhase phase, Observation seen, Class<?> next, Class<? extends Word> word,
            List<Class<? extends GateAction>> actions, GateOutcome outcome, String reason) {
        return new Row(name, LEASE, phase, seen, next, word, actions, outcome, reason);
    }

    static final Observation.Lease LEADING = new Observation.Lease("gate", true, Optional.of(NOW.plus(Duration.ofSeconds(8))));
    static final Observation.Lease NOT_LEADING = new Observation.Lease("gate", true, Optional.empty());
    static final Observation.Lease UNDECIDED = new Observation.Lease("gate", false, Optional.empty());

    static Stream<Row> table() {
        Observation free = seen();
        return Stream.of(
                row("another warden holds the gate: stand by, wait for it in the kernel, and say stop",
                        longStandby(), with(free, new Observation.Gate.NotHeld()), Standby.class, Word.Stop.class,
                        List.of(Contend.class, Say.class), GateOutcome.STANDING_BY,
                        "standing by: another warden holds the gate"),
                row("elected on a gate file watched for longer than a settle, server.lock free: lilbee may start at once",
                        longStandby(), free, Elected.class, Word.Start.class, List.of(Say.class), GateOutcome.MAY_START,
                        "elected: lilbee may start"),
                row("elected on a gate file new to this warden: settle first",
                        new Standby(new Watch(Optional.of(GATE), NOW.minus(Duration.ofSeconds(3))), at(0), at(0)), free,
                        Elected.class, Word.Stop.class, List.of(Say.class), GateOutcome.SETTLING,
                        "lilbee may start 7000 ms after this warden was elected"),
                row("a fresh warden elected at once: settle",
                        GatePhase.begin(Optional.of(GATE), NOW, FILE.permit()), free, Elected.class, Word.Stop.class, List.of(Say.class),
                        GateOutcome.SETTLING, "lilbee may start 10000 ms after"),
                row("a fresh warden beside its lilbee on the server.lock at the path: it goes on, no settle",
                        GatePhase.begin(Optional.of(GATE), NOW, FILE.permit()), lilbee(free, 4242, at(0), SERVER, GATE), Elected.class,
                        Word.Go.class, List.of(Say.class), GateOutcome.SERVING,
                        "elected: this pod's lilbee (pid 4242) holds server.lock: serving"),
                row("a fresh warden beside a lilbee still starting: it goes on, under the gate lock it holds",
                        GatePhase.begin(Optional.of(GATE), NOW, FILE.permit()), lilbee(free, 4242, NOW.minus(Duration.ofSeconds(2)), GATE),
                        Elected.class, Word.Go.class, List.of(Say.class), GateOutcome.STARTING, "is starting"),
                row("a fresh warden beside a lilbee that has run for long on no lock at the path (a renamed server.lock):"
                        + " stop it", GatePhase.begin(Optional.of(GATE), NOW, FILE.permit()), lilbee(free, 4242, at(0), OLD_SERVER, GATE),
                        Elected.class, Word.Stop.class, List.of(Say.class), GateOutcome.FENCING,
                        "holds no lock on the server.lock at the path"),
                row("elected, server.lock held by a process that is not this pod's lilbee: none starts",
                        elected(), with(free, new Observation.Server(Optional.of(SERVER), Optional.of(LockProbe.HELD),
                                Optional.empty())), Elected.class, Word.Stop.class, List.of(Say.class),
                                GateOutcome.SERVER_LOCK_HELD,
                                "not this pod's lilbee"),
                row("elected, server.lock not looked at yet: look first",
                        elected(), with(free, Observation.Server.unlooked(Optional.of(SERVER))), Elected.class,
                        Word.Stop.class, List.of(Say.class), GateOutcome.LOOKING, "looking at server.lock"),
                row("elected, server.lock cannot be looked at: the failure is the reason",
                        elected(), with(free, new Observation.Server(Optional.of(SERVER), Optional.empty(),
                                Optional.of("server.lock is a directory"))), Elected.class, Word.Stop.class, List.of(Say.class),
                        GateOutcome.SERVER_LOCK_FAILED, "server.lock is a directory"),
                row("no server.lock yet: lilbee may start and create it",
                        elected(), with(free, new Observation.Server(Optional.empty(), Optional.of(LockProbe.ABSENT),
                                Optional.empty())), Elected.class, Word.Start.class, List.of(Say.class),
                                GateOutcome.MAY_START,
                                "lilbee may start"),
                row("elected, this pod's lilbee serves: go on",
                        elected(), lilbee(free, 4242, at(0), SERVER, GATE), Elected.class, Word.Go.class, List.of(Say.class),
                        GateOutcome.SERVING, "holds server.lock: serving"),
                row("a lilbee holding another gate file's lock than this warden's (started under a replaced one): stop it",
                        elected(), lilbee(free, 4242, at(0), SERVER, NEW_GATE), Elected.class, Word.Stop.class,
                        List.of(Say.class), GateOutcome.FENCING, "holds the lock of a gate file since replaced"),
                row("a fresh warden beside a lilbee on server.lock but under another gate file's lock: it settles, lilbee stops",
                        GatePhase.begin(Optional.of(GATE), NOW, FILE.permit()), lilbee(free, 4242, at(0), SERVER), Elected.class,
                        Word.Stop.class, List.of(Say.class), GateOutcome.FENCING, "not this warden's"),
                row("elected, the lilbee proven before now holds a file no longer at the path: stop it",
                        new Elected(new Watch(Optional.of(GATE), at(0)), at(1000), Optional.empty(),
                                Optional.of(new Proven(4242, 7, OLD_SERVER)), Optional.empty(), at(0)),
                        lilbee(free, 4242, at(0), OLD_SERVER, GATE), Elected.class, Word.Stop.class, List.of(Say.class),
                        GateOutcome.FENCING, "no longer the file at the path"),
                row("the gate file held was replaced: not elected any more, let it go and contend for the new one",
                        elected(), new Observation(NOW, new Observation.Gate.Held(GATE, false), Optional.empty(),
                                Optional.of(NEW_GATE), free.server(), free.supervisor()), Standby.class, Word.Stop.class,
                        List.of(ReleaseGate.class, Contend.class, Say.class), GateOutcome.NOT_ELECTED_ANY_MORE,
                        "not elected any more: the gate file"),
                row("the volume cannot lock (file mode): stand by, try again, say why",
                        longStandby(), with(free, new Observation.Gate.Unlockable("cannot lock it: no locks here")),
                        Standby.class, Word.Stop.class, List.of(Contend.class, Say.class), GateOutcome.STANDING_BY,
                        "no locks here"),
                lease("lease mode, not asked yet (a restarted warden): not a word, nothing done",
                        GatePhase.begin(Optional.of(GATE), NOW, FILE.permit()), with(lilbee(free, 4242, at(0), SERVER, GATE), UNDECIDED),
                        Standby.class, Word.Silent.class, List.of(Say.class), GateOutcome.ASKING_THE_LEASE,
                        "asking the API server"),
                lease("lease mode, the Lease lost: let the gate go, contend for nothing, stop lilbee",
                        elected(), with(lilbee(free, 4242, at(0), SERVER, GATE), NOT_LEADING), Standby.class, Word.Stop.class,
                        List.of(ReleaseGate.class, Say.class), GateOutcome.NOT_ELECTED_ANY_MORE,
                        "not elected any more: this warden does not lead the Lease"),
                lease("lease mode, leading, the gate lock not held yet: contend for it",
                        longStandby(), with(with(free, new Observation.Gate.NotHeld()), LEADING), Standby.class,
                        Word.Stop.class, List.of(Contend.class, Say.class), GateOutcome.STANDING_BY,
                        "another warden holds the gate"),
                lease("lease mode, leading and holding the gate: no settle, the Lease's passing was the wait",
                        GatePhase.begin(Optional.of(GATE), NOW, FILE.permit()), with(free, LEADING), Elected.class, Word.Start.class,
                        List.of(Say.class), GateOutcome.MAY_START, "lilbee may start"),
                lease("lease mode on a volume that cannot lock: the Lease alone elects",
                        longStandby(), with(with(free, new Observation.Gate.Unlockable("no locks")), LEADING),
                        Elected.class, Word.Start.class, List.of(Say.class), GateOutcome.MAY_START, "lilbee may start"),
                row("the elected pod has not served for the handover time and runs no lilbee: the gate goes",
                        new Elected(new Watch(Optional.of(GATE), at(0)), at(1000), Optional.empty(), Optional.empty(),
                                Optional.of(NOW.minus(HANDOVER)), at(0)), with(free, new Observation.Supervisor(false, Optional.empty())),
                        Standby.class, Word.Stop.class, List.of(Say.class, ReleaseGate.class),
                        GateOutcome.HANDED_OVER, "letting the gate go to a standby"),
                row("after a handover, not contending for the handover time: a standby waiting in the kernel takes the gate",
                        new Standby(new Watch(Optional.of(GATE), at(0)), at(1000), at(0), NOW.plus(Duration.ofMillis(1))),
                        with(free, new Observation.Gate.NotHeld()), Standby.class, Word.Stop.class, List.of(Say.class),
                        GateOutcome.HOLDING_BACK, "holding back after a handover"),
                row("after a handover and its wait, contending again: with no standby this pod is elected again",
                        new Standby(new Watch(Optional.of(GATE), at(0)), at(1000), at(0), NOW),
                        with(free, new Observation.Gate.NotHeld()), Standby.class, Word.Stop.class,
                        List.of(Contend.class, Say.class), GateOutcome.STANDING_BY,
                        "standing by: another warden holds the gate"),
                lease("lease mode hands over by stepping aside too",
                        new Elected(new Watch(Optional.of(GATE), at(0)), at(1000), Optional.empty(), Optional.empty(),
                                Optional.of(NOW.minus(HANDOVER)), at(0)), with(with(free, new Observation.Supervisor(false,
                                        Optional.empty())), LEADING), Standby.class, Word.Stop.class,
                        List.of(Say.class, ReleaseGate.class, StepAside.class), GateOutcome.HANDED_OVER,
                        "letting the gate go"),
                row("no handover while a lilbee is starting",
                        new Elected(new Watch(Optional.of(GATE), at(0)), at(1000), Optional.empty(), Optional.empty(),
                                Optional.of(NOW.minus(HANDOVER)), at(0)), lilbee(free, 4242, NOW.minus(Duration.ofSeconds(1)), GATE),
                        Elected.class, Word.Go.class, List.of(Say.class), GateOutcome.STARTING, "is starting"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("table")
    void decides(Row row) {
        Step step = new GateDecision(row.timings()).step(row.phase(), row.seen());
        assertInstanceOf(row.nextPhase(), step.phase(), row.name());
        assertInstanceOf(row.word(), step.word(), step.reason());
        assertEquals(row.actions(), step.actions().stream().map(Object::getClass).toList(), step.reason());
        assertTrue(step.reason().contains(row.reason()), "reason: " + step.reason());
        assertEquals(row.outcome(), step.outcome(), step.reason());
        assertTrue(step.actions().contains(new Say(step.word())), "the word said is the step's");
    }

    /** Every permit ends a permit's length from now at the latest, and in lease mode never after the lead. */
    @Test
    void aPermitNeverOutlastsItsLengthNorTheLead() {
        Step file = new GateDecision(FILE).step(elected(), lilbee(seen(), 4242, at(0), SERVER, GATE));
        assertEquals(NOW.plus(PERMIT), ((Word.Go) file.word()).until());
        Observation.Lease shortLead = new Observation.Lease("gate", true, Optional.of(NOW.plus(Duration.ofSeconds(2))));
        Step lease = new GateDecision(LEASE).step(elected(), with(lilbee(seen(), 4242, at(0), SERVER, GATE), shortLead));
        assertEquals(NOW.plus(Duration.ofSeconds(2)), ((Word.Go) lease.word()).until());
        assertTrue(lease.serving());
    }

    /** The settle is set once, at the election, from the watch: served when its moment comes, not before. */
    @Test
    void aSettleEndsWhereTheWatchSaysAndNotBefore() {
        GateDecision decision = new GateDecision(FILE);
        GatePhase phase = new Standby(new Watch(Optional.of(GATE), NOW.minus(Duration.ofSeconds(3))), at(0), at(0));
        Step first = decision.step(phase, seen());
        Elected elected = (Elected) first.phase();
        assertEquals(Optional.of(NOW.plus(Duration.ofSeconds(7))), elected.settleUntil());
        Step justBefore = decision.step(elected, at(seen(), NOW.plus(Duration.ofSeconds(7)).minus(Duration.ofNanos(1))));
        assertInstanceOf(Word.Stop.class, justBefore.word());
        Step then = decision.step(justBefore.phase(), at(seen(), NOW.plus(Duration.ofSeconds(7))));
        assertInstanceOf(Word.Start.class, then.word());
    }

    /** A standby sees the gate file replaced: its watch starts again, and its election settles from that moment. */
    @Test
    void aReplacedGateFileRestartsTheWatch() {
        GateDecision decision = new GateDecision(FILE);
        Observation away = new Observation(NOW, new Observation.Gate.NotHeld(), Optional.empty(), Optional.of(NEW_GATE),
                seen().server(), seen().supervisor());
        Step replaced = decision.step(longStandby(), away);
        assertEquals(new Watch(Optional.of(NEW_GATE), NOW), replaced.phase().watch());
        Moment later = NOW.plus(Duration.ofSeconds(4));
        Observation won = new Observation(later, new Observation.Gate.Held(NEW_GATE, true), Optional.empty(),
                Optional.of(NEW_GATE), seen().server(), seen().supervisor());
        Step elected = decision.step(replaced.phase(), won);
        assertEquals(Optional.of(NOW.plus(SETTLE)), ((Elected) elected.phase()).settleUntil());
        assertEquals(replaced.phase().watch(), decision.step(replaced.phase(), at(away, later)).phase().watch(),
                "the same file keeps the watch");
    }

    /** Serving is elected, its lilbee on the file at the path, and the word go; the proof is remembered. */
    @Test
    void servingIsProvenAndRemembered() {
        Step step = new GateDecision(FILE).step(elected(), lilbee(seen(), 4242, at(0), SERVER, GATE));
        assertTrue(step.serving());
        assertEquals(LilbeeState.SERVING, step.lilbee().state());
        assertEquals(Optional.of(new Proven(4242, 7, SERVER)), ((Elected) step.phase()).proven());
        assertEquals(Optional.empty(), ((Elected) step.phase()).unservedSince());
    }

    /** The handover clock starts once the pod may serve and does not; a serving round stops it. */
    @Test
    void theHandoverClockRunsOnlyWhileThePodMayServeAndDoesNot() {
        GateDecision decision = new GateDecision(FILE);
        Step waiting = decision.step(elected(), seen());
        assertEquals(Optional.of(NOW), ((Elected) waiting.phase()).unservedSince());
        Step settling = decision.step(GatePhase.begin(Optional.of(GATE), NOW, FILE.permit()), seen());
        assertEquals(Optional.empty(), ((Elected) settling.phase()).unservedSince(), "not while settling");
        Step served = decision.step(waiting.phase(), lilbee(at(seen(), NOW.plus(Duration.ofSeconds(3))), 4242, at(0), SERVER, GATE));
        assertEquals(Optional.empty(), ((Elected) served.phase()).unservedSince());
    }

    /**
     * In lease mode the gate goes to a standby only once every permit given has run out and a lilbee it kept is surely
     * gone: a Lease released sooner passes to another node at once (the simulation found it so). Until then, stop.
     */
    @Test
    void aLeaseIsHandedOverOnlyOnceNoPermitGivenCanBeUsed() {
        GateDecision decision = new GateDecision(LEASE);
        Observation quiet = with(with(seen(), new Observation.Supervisor(true, Optional.empty())), LEADING);
        Elected recently = new Elected(new Watch(Optional.of(GATE), at(0)), at(1000), Optional.empty(), Optional.empty(),
                Optional.of(NOW.minus(HANDOVER)), NOW.minus(Duration.ofSeconds(1)));
        Step waiting = decision.step(recently, quiet);
        assertInstanceOf(Elected.class, waiting.phase());
        assertEquals(List.of(new Say(waiting.word())), waiting.actions());
        assertTrue(waiting.reason().contains("once no permit given can be used"), waiting.reason());
        assertTrue(!decision.mayLetTheLeaseGo(recently, NOW));
        Moment safe = NOW.minus(Duration.ofSeconds(1)).plus(LEASE.overrun());
        assertTrue(decision.mayLetTheLeaseGo(recently, safe));
        Observation later = new Observation(safe, quiet.gate(), Optional.of(new Observation.Lease("gate", true,
                Optional.of(safe.plus(Duration.ofSeconds(5))))), quiet.gateAtPath(), quiet.server(), quiet.supervisor());
        assertTrue(decision.step(waiting.phase(), later).actions().contains(new StepAside()));
        Observation reported = with(quiet, new Observation.Supervisor(true, Optional.empty(),
                Optional.of(NOW.plus(Duration.ofSeconds(3)))));
        assertEquals(NOW.plus(Duration.ofSeconds(3)), decision.step(longStandby(), with(reported, new Observation.Gate.NotHeld()))
                .phase().permitsEnd(), "a permit the supervisor says it holds (a previous run's) counts as given");
    }

    static Observation askedToStepDown(Observation o, Moment asked) {
        return new Observation(o.now(), o.gate(), o.lease(), o.gateAtPath(), o.server(), o.supervisor(), Optional.of(asked));
    }

    /**
     * A step-down asked while elected, in file mode: lilbee is told to stop and the gate lock let go at once (lilbee
     * holds it until it has exited, so nobody is elected sooner), and this warden stands by, not contending for a
     * handover's time, so that a standby waiting for the gate takes it. A request from before this election, or one
     * while standing by, changes nothing.
     */
    @Test
    void aStepDownLetsTheGateGoAtOnceInFileModeAndStandsByForAHandover() {
        GateDecision decision = new GateDecision(FILE);
        Observation serving = lilbee(seen(), 4242, at(0), SERVER, GATE);
        Step stepped = decision.step(elected(), askedToStepDown(serving, NOW.minus(Duration.ofMillis(20))));
        Standby standby = assertInstanceOf(Standby.class, stepped.phase());
        assertEquals(NOW.plus(HANDOVER), standby.contendFrom());
        assertEquals(List.of(new Say(stepped.word()), new RetireGate()), stepped.actions(), "kept for its lilbee's unlock");
        assertInstanceOf(Word.Stop.class, stepped.word());
        assertTrue(!stepped.serving() && stepped.reason().startsWith("stepped down, as asked"), stepped.reason());
        Observation stopping = at(with(serving, new Observation.Gate.NotHeld()), NOW.plus(Duration.ofSeconds(1)));
        Step next = decision.step(stepped.phase(), stopping);
        assertTrue(next.actions().stream().noneMatch(Contend.class::isInstance), "not while its lilbee stops: " + next);
        assertEquals(NOW.plus(HANDOVER), ((Standby) next.phase()).contendFrom());
        Observation gone = at(with(with(seen(), new Observation.Gate.NotHeld()), new Observation.Supervisor(true, Optional.empty())),
                NOW.plus(Duration.ofSeconds(2)));
        Step holding = decision.step(next.phase(), gone);
        assertEquals(List.of(new ReleaseGate(), new Say(holding.word())), holding.actions(), "its lilbee gone, the lock with it");
        assertTrue(holding.actions().stream().noneMatch(Contend.class::isInstance), "a moment more, for the standby: " + holding);
        Moment soon = NOW.plus(Duration.ofSeconds(2)).plus(GateDecision.HOLD_BACK_AFTER_STOP);
        assertEquals(soon, ((Standby) holding.phase()).contendFrom(), "held back a moment once nothing of this pod holds the gate");
        assertTrue(decision.step(holding.phase(), at(gone, soon)).actions().contains(new Contend()),
                "contending again, behind the standby that took it");
        Step noSupervisor = decision.step(next.phase(), at(with(gone, Observation.Supervisor.absent()), NOW.plus(Duration.ofSeconds(2))));
        assertEquals(NOW.plus(HANDOVER), ((Standby) noSupervisor.phase()).contendFrom(),
                "a supervisor out of reach says nothing of its lilbee: the whole handover's time");
        Step before = decision.step(elected(), askedToStepDown(serving, at(999)));
        assertTrue(before.serving(), "a request from before this election: " + before.reason());
        Step standing = decision.step(longStandby(), askedToStepDown(with(seen(), new Observation.Gate.NotHeld()), NOW));
        assertEquals(longStandby().watch(), standing.phase().watch());
        assertTrue(standing.actions().contains(new Contend()), "a standby asked goes on contending: " + standing);
    }

    /**
     * A step-down from a serving lilbee keeps the gate lock's open file (retired), and unlocks it for that lilbee too
     * the round it is seen holding the gate lock but no server.lock: lilbee lets server.lock go last thing, once its
     * server and engine have stopped, and then only exits (0.6 s more, lilbee 0.6.90b449), so a standby is elected
     * while it exits. Only on that positive look: a look that saw nothing of it (its descriptors unreadable), a
     * server.lock at the path it holds, or the file it served still held keep the gate locked; another instance, or
     * none reported, close the descriptor (the lock ends with the process). Lease mode retires nothing.
     */
    @Test
    void aSteppedDownLilbeeHasTheGateUnlockedForItOnceItHasLetServerLockGo() {
        GateDecision decision = new GateDecision(FILE);
        Observation serving = lilbee(seen(), 4242, at(0), SERVER, GATE);
        Step stepped = decision.step(elected(), askedToStepDown(serving, NOW));
        Standby retired = assertInstanceOf(Standby.class, stepped.phase());
        assertEquals(Optional.of(new GatePhase.Leaving(new Proven(4242, 7, SERVER), GATE)), retired.leaving());
        Moment later = NOW.plus(Duration.ofMillis(300));
        Observation notHeld = with(seen(), new Observation.Gate.NotHeld());
        Step done = decision.step(retired, at(lilbee(notHeld, 4242, at(0), GATE), later));
        assertEquals(List.of(new UnlockGate(), new Say(done.word())), done.actions(), done.reason());
        assertEquals(Optional.empty(), ((Standby) done.phase()).leaving(), "unlocked once");
        assertEquals(later.plus(GateDecision.HOLD_BACK_AFTER_STOP), ((Standby) done.phase()).contendFrom(),
                "held back a moment, as once nothing of this pod holds the gate");
        for (Observation still : List.of(lilbee(notHeld, 4242, at(0)), lilbee(notHeld, 4242, at(0), SERVER, GATE),
                lilbee(notHeld, 4242, at(0), SERVER))) {
            Step kept = decision.step(retired, at(still, later));
            assertEquals(List.of(new Say(kept.word())), kept.actions(), still.supervisor().toString());
            assertEquals(retired.leaving(), ((Standby) kept.phase()).leaving());
        }
        Observation replaced = new Observation(later, new Observation.Gate.NotHeld(), Optional.empty(), Optional.of(GATE),
                new Observation.Server(Optional.of(NEW_GATE), Optional.empty(), Optional.empty()),
                lilbee(notHeld, 4242, at(0), NEW_GATE, GATE).supervisor());
        assertEquals(retired.leaving(), ((Standby) decision.step(retired, replaced).phase()).leaving(),
                "a server.lock at the path it holds, whatever file it is");
        for (Observation gone : List.of(lilbee(notHeld, 4343, at(0), GATE), with(notHeld, new Observation.Supervisor(true,
                Optional.empty())), with(notHeld, Observation.Supervisor.absent()))) {
            Step released = decision.step(retired, at(gone, later));
            assertEquals(new ReleaseGate(), released.actions().getFirst(), gone.supervisor().toString());
            assertEquals(Optional.empty(), ((Standby) released.phase()).leaving());
        }
        Observation leased = with(serving, LEADING);
        Step inLease = new GateDecision(LEASE).step(elected(), askedToStepDown(with(leased, new Observation.Supervisor(true,
                leased.supervisor().lilbee(), Optional.empty(), true)), NOW));
        assertTrue(inLease.actions().stream().noneMatch(RetireGate.class::isInstance), inLease.actions().toString());
    }

    /**
     * In lease mode a step-down keeps the Lease until the supervisor says its stop is done (no lilbee, no permit), or
     * until no permit given can be used any more: a Lease let go sooner passes to another node while this lilbee stops
     * (GateMutationSoak's aLeaseLetGoAtOnceOnStepDown finds that split brain). Meanwhile it says stop, and does not serve.
     */
    @Test
    void aStepDownInLeaseModeLetsTheLeaseGoOnceLilbeeHasStopped() {
        GateDecision decision = new GateDecision(LEASE);
        Elected recently = new Elected(new Watch(Optional.of(GATE), at(0)), at(1000), Optional.empty(), Optional.empty(),
                Optional.empty(), NOW.plus(PERMIT));
        Observation serving = askedToStepDown(with(lilbee(seen(), 4242, at(0), SERVER, GATE), LEADING), NOW);
        Step stopping = decision.step(recently, serving);
        assertInstanceOf(Elected.class, stopping.phase());
        assertEquals(List.of(new Say(stopping.word())), stopping.actions());
        assertInstanceOf(Word.Stop.class, stopping.word());
        assertTrue(!stopping.serving(), "not serving while stepping down");
        Observation stopped = new Observation(NOW.plus(Duration.ofSeconds(1)), serving.gate(), serving.lease(), serving.gateAtPath(),
                serving.server(), new Observation.Supervisor(true, Optional.empty(), Optional.empty(), true), serving.stepDown());
        Step handed = decision.step(stopping.phase(), stopped);
        assertInstanceOf(Standby.class, handed.phase());
        assertEquals(List.of(new Say(handed.word()), new ReleaseGate(), new StepAside()), handed.actions());
        Observation silent = new Observation(NOW.plus(PERMIT).plus(LEASE.overrun()), serving.gate(), Optional.of(
                new Observation.Lease("gate", true, Optional.of(NOW.plus(Duration.ofSeconds(20))))), serving.gateAtPath(),
                serving.server(), new Observation.Supervisor(false, Optional.empty()), serving.stepDown());
        assertTrue(decision.step(stopping.phase(), silent).actions().contains(new StepAside()),
                "no answer, but no permit given can be used any more");
    }

    /** The timing inequalities, each named with both sides when violated. */
    @Test
    void timingsThatCannotKeepTwoLilbeesApartAreNamed() {
        assertEquals(List.of(), FILE.problems());
        assertEquals(List.of(), LEASE.problems());
        GateTimings shortSettle = new GateTimings(Duration.ofSeconds(8), PERMIT, Duration.ofSeconds(2), Duration.ofSeconds(4),
                HANDOVER, Optional.empty());
        assertEquals(1, shortSettle.problems().size());
        assertTrue(shortSettle.problems().getFirst().contains("warden.gate.supervisor.permit (5000 ms)")
                && shortSettle.problems().getFirst().contains("warden.gate.settle (8000 ms)"), shortSettle.problems().getFirst());
        GateTimings tightLease = new GateTimings(SETTLE, PERMIT, Duration.ofSeconds(2), Duration.ofSeconds(6), HANDOVER,
                Optional.of(new GateTimings.Lease(Duration.ofSeconds(15), Duration.ofSeconds(10), Duration.ofSeconds(10))));
        List<String> problems = tightLease.problems();
        assertEquals(3, problems.size(), String.join("\n", problems));
        assertTrue(problems.stream().anyMatch(p -> p.contains("retry-period (10000 ms)") && p.contains("renew-deadline (10000 ms)")));
        assertTrue(problems.stream().anyMatch(p -> p.contains("stall-bound (6000 ms)") && p.contains("lease.duration (15000 ms)")));
        assertEquals(List.of("warden.gate.settle is 0 ms: it must be longer than nothing"), new GateTimings(Duration.ZERO,
                Duration.ofMillis(-1), Duration.ofSeconds(2), Duration.ofSeconds(4), HANDOVER, Optional.empty()).problems()
                .subList(0, 1));
    }

    /** How long a whole node may freeze at the worst moment: the defaults leave 3 s, and less than the margin is named. */
    @Test
    void timingsLeaveTheMarginANodeMayFreeze() {
        assertEquals(Duration.ofSeconds(3), FILE.pauseTolerance(), "settle less permit and grace");
        assertEquals(Duration.ofSeconds(3), LEASE.pauseTolerance(), "the Lease's duration less its renew deadline and grace");
        assertEquals(List.of(), FILE.problems(Duration.ofSeconds(1)));
        assertEquals(List.of(), LEASE.problems(Duration.ofSeconds(3)));
        List<String> file = FILE.problems(Duration.ofSeconds(4));
        assertEquals(1, file.size(), String.join("\n", file));
        assertTrue(file.getFirst().contains("leaves 3000 ms, less than warden.gate.pause-margin (4000 ms)")
                && file.getFirst().contains("Lengthen the settle"), file.getFirst());
        List<String> lease = LEASE.problems(Duration.ofSeconds(4));
        assertEquals(1, lease.size(), String.join("\n", lease));
        assertTrue(lease.getFirst().contains("warden.gate.lease.duration (15000 ms)")
                && lease.getFirst().contains("Lengthen the Lease's duration"), lease.getFirst());
    }

    /** The watch is what a phase carries from round to round, whatever else changes. */
    @Test
    void everyPhaseCarriesTheWatchForward() {
        UnaryOperator<Observation> elsewhere = o -> new Observation(o.now(), new Observation.Gate.NotHeld(), o.lease(),
                Optional.of(NEW_GATE), o.server(), o.supervisor());
        for (GatePhase phase : List.of(longStandby(), elected())) {
            Step step = new GateDecision(FILE).step(phase, elsewhere.apply(seen()));
            assertEquals(new Watch(Optional.of(NEW_GATE), NOW), step.phase().watch());
        }
    }
}
