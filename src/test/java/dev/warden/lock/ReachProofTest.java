package dev.warden.lock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.time.Moment;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Who serves when a lock's heartbeat shows another holder: the decision alone, on records and moments. */
class ReachProofTest {

    private static final Duration BEAT = Duration.ofMillis(250);
    private static final Moment T0 = new Moment(1_000_000_000L);
    private static final String HERE = "boot-b:41";
    private static final String THERE = "boot-a:40";
    private final ReachProof mine = new ReachProof("b:2", "b", HERE, BEAT, Duration.ZERO);

    private static Moment at(long millis) {
        return T0.plus(Duration.ofMillis(millis));
    }

    /** A record of holder {@code a:1}, of the other domain. */
    private static Optional<Heartbeat> record(long generation, long beat) {
        return Optional.of(new Heartbeat("a:1", "a", THERE, generation, beat, false));
    }

    @Test
    void aLockTakenInTheDomainOfTheRecordsHolderIsHeldAtOnceAboveIt() {
        // One kernel, one device: that holder would still keep this one out if it held the lock.
        ReachProof.Step step = mine.taken(Optional.of(new Heartbeat("a:1", "a", HERE, 7, 40, false)), T0);
        ReachProof.Reach.Proven proven = assertInstanceOf(ReachProof.Reach.Proven.class, step.reach());
        assertEquals(8, proven.mine().generation());
        assertEquals(HERE, proven.mine().domain());
        assertEquals(Optional.of(proven.mine()), step.write(), "its first beat is written at once");
        assertInstanceOf(ReachProof.Reach.Proven.class, mine.taken(Optional.empty(), T0).reach(), "no record at all");
    }

    @Test
    void aLockTakenWhileTheRecordNamesAHolderOfAnotherDomainWaitsForItsSilence() {
        ReachProof.Step step = mine.taken(record(3, 9), T0);
        assertInstanceOf(ReachProof.Reach.Proving.class, step.reach());
        assertEquals(Optional.empty(), step.write(), "nothing is written while proving: the other holder would read it");
        step = mine.step(step.reach(), record(3, 9), at(999));
        assertInstanceOf(ReachProof.Reach.Proving.class, step.reach());
        step = mine.step(step.reach(), record(3, 9), at(1000));
        assertEquals(4, assertInstanceOf(ReachProof.Reach.Proven.class, step.reach()).mine().generation());
        Optional<Heartbeat> released = Optional.of(new Heartbeat("a:1", "a", THERE, 3, 10, true));
        assertInstanceOf(ReachProof.Reach.Proving.class, mine.taken(released, T0).reach(),
                "a record saying released is anyone's to write: no proof across domains");
    }

    @Test
    void aHolderThatStillBeatsCameFirstAndThisOneStandsByUntilItStops() {
        ReachProof.Step step = mine.taken(record(3, 9), T0);
        step = mine.step(step.reach(), record(3, 10), at(250));
        assertInstanceOf(ReachProof.Reach.Shared.class, step.reach());
        step = mine.step(step.reach(), record(3, 14), at(1200));
        assertInstanceOf(ReachProof.Reach.Shared.class, step.reach(), "each beat seen starts the window again");
        step = mine.step(step.reach(), record(3, 14), at(2199));
        assertInstanceOf(ReachProof.Reach.Shared.class, step.reach());
        assertEquals(Optional.empty(), step.write());
        step = mine.step(step.reach(), record(3, 14), at(2200));
        assertEquals(4, assertInstanceOf(ReachProof.Reach.Proven.class, step.reach()).mine().generation());
    }

    @Test
    void aStandbyTrustsSilenceAloneNotARecordSayingReleasedOrNone() {
        ReachProof.Step step = mine.step(mine.taken(record(3, 9), T0).reach(), record(3, 10), at(250));
        step = mine.step(step.reach(), Optional.of(new Heartbeat("a:1", "a", THERE, 3, 11, true)), at(500));
        assertInstanceOf(ReachProof.Reach.Proving.class, step.reach());
        step = mine.step(step.reach(), Optional.empty(), at(750));
        assertInstanceOf(ReachProof.Reach.Proving.class, step.reach(), "a change starts the window again");
        step = mine.step(step.reach(), Optional.empty(), at(1749));
        assertInstanceOf(ReachProof.Reach.Proving.class, step.reach());
        step = mine.step(step.reach(), Optional.empty(), at(1750));
        assertInstanceOf(ReachProof.Reach.Proven.class, step.reach());
    }

    @Test
    void theFirstHolderKeepsServingAndSaysSoWhileALaterOneBeats() {
        ReachProof.Step step = mine.taken(Optional.empty(), T0);
        assertEquals(1, ((ReachProof.Reach.Proven) step.reach()).mine().generation());
        // A later holder (a higher generation) came through a mount of its own.
        step = mine.step(step.reach(), record(2, 0), at(250));
        ReachProof.Reach.Proven proven = assertInstanceOf(ReachProof.Reach.Proven.class, step.reach());
        assertEquals(Optional.of(at(250)), proven.overlapSeen());
        assertTrue(step.write().isPresent(), "it goes on beating, so that the later holder stands by");
        Heartbeat own = step.write().get();
        step = mine.step(step.reach(), Optional.of(own), at(1249));
        assertTrue(((ReachProof.Reach.Proven) step.reach()).overlapSeen().isPresent());
        step = mine.step(step.reach(), Optional.of(own), at(1250));
        assertEquals(Optional.empty(), ((ReachProof.Reach.Proven) step.reach()).overlapSeen(), "over once unseen for the window");
    }

    @Test
    void aRecordOfThisWardensOwnDomainByAnotherHolderIsAForgeryAndIgnored() {
        // While this warden holds the lock, no other holder of its domain can: the kernel keeps one of them out.
        ReachProof.Step step = mine.taken(Optional.empty(), T0);
        step = mine.step(step.reach(), Optional.of(new Heartbeat("a:1", "a", HERE, 0, 10, false)), at(250));
        assertInstanceOf(ReachProof.Reach.Proven.class, step.reach());
        assertEquals(Optional.empty(), ((ReachProof.Reach.Proven) step.reach()).overlapSeen());
    }

    @Test
    void somethingAtThePathThatIsNotARecordIsWaitedOutByATakerAndIgnoredByTheHolder() {
        ReachProof.Step step = mine.taken(Optional.of(Heartbeat.UNREADABLE), T0);
        assertInstanceOf(ReachProof.Reach.Proving.class, step.reach(), "a holder of another domain may be behind it");
        assertInstanceOf(ReachProof.Reach.Proven.class, mine.step(step.reach(), Optional.of(Heartbeat.UNREADABLE), at(1000))
                .reach(), "once it stayed as it was for the window");
        ReachProof.Reach held = mine.taken(Optional.empty(), T0).reach();
        assertInstanceOf(ReachProof.Reach.Proven.class, mine.step(held, Optional.of(Heartbeat.UNREADABLE), at(5000)).reach(),
                "a directory at the path does not make the holder stand by");
        assertEquals(Optional.empty(), Heartbeat.parse(("warden-heartbeat 1 holder=a:1 pod=a domain=d generation="
                + "100000000000000000 beat=1 state=held").getBytes()), "no generation so high that one above it could not parse");
    }

    @Test
    void aFirstHolderThatFellSilentForTheWindowStandsByForTheOneThatTookOver() {
        ReachProof.Reach held = mine.taken(Optional.empty(), T0).reach();
        // Paused (SIGSTOP, a frozen node) for the window: a later holder took over meanwhile.
        ReachProof.Step step = mine.step(held, record(2, 0), at(1000));
        assertInstanceOf(ReachProof.Reach.Shared.class, step.reach());
        assertEquals(Optional.empty(), step.write(), "it does not beat over the holder that took over");
    }

    @Test
    void twoHoldersOfOneGenerationAgreeWhichCameFirst() {
        ReachProof other = new ReachProof("a:1", "a", THERE, BEAT, Duration.ZERO);
        ReachProof.Reach mineHeld = mine.taken(Optional.empty(), T0).reach();
        ReachProof.Reach otherHeld = other.taken(Optional.empty(), T0).reach();
        ReachProof.Reach mineNext = mine.step(mineHeld, Optional.of(((ReachProof.Reach.Proven) otherHeld).mine()), at(250)).reach();
        ReachProof.Reach otherNext = other.step(otherHeld, Optional.of(((ReachProof.Reach.Proven) mineHeld).mine()), at(250)).reach();
        assertInstanceOf(ReachProof.Reach.Shared.class, mineNext, "b:2 sorts after a:1: the later of a tie stands by");
        assertInstanceOf(ReachProof.Reach.Proven.class, otherNext);
    }

    @Test
    void inGateModeASilentHolderIsGoneOnlyOnceWhatItServesCannotOutliveIt() {
        ReachProof gate = new ReachProof("b:2", "b", HERE, BEAT, Duration.ofSeconds(9));
        assertEquals(Duration.ofMillis(9250), gate.window(), "the permit and its overrun, and a beat");
        assertEquals(Duration.ofSeconds(1), mine.window(), "four beats where nothing outlives the hold");
        ReachProof.Reach proving = gate.taken(record(3, 9), T0).reach();
        assertInstanceOf(ReachProof.Reach.Proving.class, gate.step(proving, record(3, 9), at(9249)).reach());
        assertInstanceOf(ReachProof.Reach.Proven.class, gate.step(proving, record(3, 9), at(9250)).reach());
    }

    @Test
    void aHolderBeatsOncePerBeatAndLeavesItsRecordReleased() {
        ReachProof.Step step = mine.taken(Optional.empty(), T0);
        Heartbeat first = step.write().orElseThrow();
        step = mine.step(step.reach(), Optional.of(first), at(249));
        assertEquals(Optional.empty(), step.write());
        step = mine.step(step.reach(), Optional.of(first), at(250));
        assertEquals(1, step.write().orElseThrow().beat());
        assertTrue(mine.letGo(step.reach()).orElseThrow().released());
        assertEquals(Optional.empty(), mine.letGo(new ReachProof.Reach.Proving(T0, Optional.empty())),
                "a holder that never served leaves the record as it found it");
    }

    @Test
    void aRecordReadsBackAsWrittenAndNothingElseIsOne() {
        Heartbeat beat = new Heartbeat("pod-0:1a2b3c4d", "pod-0", "0b1c-77:41", 12, 345, false);
        assertEquals(Optional.of(beat), Heartbeat.parse(beat.bytes()));
        assertEquals(Optional.empty(), Heartbeat.parse(("warden-heartbeat 1 holder=a pod=a domain=d generation=1 beat=x"
                + " state=held\n").getBytes()));
        assertEquals(Optional.empty(), Heartbeat.parse(new byte[Heartbeat.MAX_BYTES + 1]));
        assertEquals(Optional.empty(), Heartbeat.parse(("warden-heartbeat 1 holder=a b pod=a domain=d generation=1 beat=1"
                + " state=held").getBytes()));
    }
}
