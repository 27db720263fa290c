package dev.warden.gate.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.time.Moment;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The Lease election's loop as values, step by step on a clock of the test's: what it asks the API server next, what it
 * waits for, and what each answer makes of it (client-go's timings: 15 s Lease, 10 s renew deadline, 2 s retry).
 */
class LeaseLoopTest {

    private static final String ME = "pod-a@node-1";
    private static final LeaseElection.Settings SETTINGS = new LeaseElection.Settings("warden-gate", Optional.empty(), ME,
            Duration.ofSeconds(15), Duration.ofSeconds(10), Duration.ofSeconds(2));
    private static final Clock WALL = Clock.fixed(Instant.parse("2026-12-07T00:00:00Z"), ZoneOffset.UTC);

    private final LeaseLoop loop = new LeaseLoop(SETTINGS, at(0), WALL, () -> 0.5);
    private long version;

    private static Moment at(long millis) {
        return new Moment(Duration.ofMillis(millis).toNanos());
    }

    private LeaseStore.Stored stored(LeaseRecord record) {
        return new LeaseStore.Stored(record, ++version);
    }

    private LeaseLoop.Request asked(long millis) {
        return assertInstanceOf(LeaseLoop.Next.Ask.class, loop.next(at(millis))).request();
    }

    private Moment waits(long millis) {
        return assertInstanceOf(LeaseLoop.Next.Wait.class, loop.next(at(millis))).until();
    }

    /** Takes the free Lease the chart made: read, then written naming this warden. */
    private LeaseStore.Stored leading() {
        loop.began(at(0), "test/warden-gate");
        assertInstanceOf(LeaseLoop.Request.Get.class, asked(0));
        loop.answered(new LeaseLoop.Answer.Lease(Optional.of(stored(new LeaseRecord(Optional.empty(),
                Optional.of(Duration.ofSeconds(15)), Optional.empty(), Optional.empty(), 0)))), at(10));
        LeaseLoop.Request.Update write = assertInstanceOf(LeaseLoop.Request.Update.class, asked(10));
        assertEquals(Optional.of(ME), write.record().holder());
        LeaseStore.Stored written = stored(write.record());
        loop.answered(new LeaseLoop.Answer.Lease(Optional.of(written)), at(20));
        assertTrue(loop.state().leading());
        assertEquals(Optional.of(at(10).plus(Duration.ofSeconds(10))), loop.state().leadingUntil(at(20), Duration.ofSeconds(10)),
                "the lead counts from the write's send");
        return written;
    }

    @Test
    void aLeaderRenewsEveryRetryPeriodAndStepsDownWhenNoRenewalSucceedsWithinTheDeadline() {
        leading();
        assertEquals(at(2_020), waits(30), "the first renewal a retry period on");
        assertInstanceOf(LeaseLoop.Request.Get.class, asked(2_020));
        // No answer within a request's time (the client cuts it off after a retry period), three times over.
        loop.answered(new LeaseLoop.Answer.Unanswered("timed out"), at(4_020));
        assertEquals(at(6_020), waits(4_020));
        assertInstanceOf(LeaseLoop.Request.Get.class, asked(6_020));
        loop.answered(new LeaseLoop.Answer.Unanswered("timed out"), at(8_020));
        assertInstanceOf(LeaseLoop.Request.Get.class, asked(10_020));
        loop.answered(new LeaseLoop.Answer.Unanswered("timed out"), at(12_020));
        assertFalse(loop.state().leading(), "no retry fits before the deadline (2.02 s + 10 s): stepped down");
        assertEquals(at(14_020), waits(12_020), "a retry period out, the Lease left to expire (no release)");
        assertInstanceOf(LeaseLoop.Request.Get.class, asked(14_020), "then contending again");
    }

    @Test
    void aLeaderThatStepsAsideReleasesTheLeaseAndStaysOutUntilItsAsideEnds() {
        LeaseStore.Stored written = leading();
        loop.stepAside(at(6_030));
        LeaseLoop.Request.Update release = assertInstanceOf(LeaseLoop.Request.Update.class, asked(30),
                "the wait ends at once: released");
        assertEquals(written, release.read());
        assertEquals(Optional.empty(), release.record().holder());
        loop.answered(new LeaseLoop.Answer.Lease(Optional.of(stored(release.record()))), at(40));
        assertFalse(loop.state().leading());
        assertEquals(at(2_040), waits(40), "a retry period");
        assertEquals(at(6_030), waits(2_040), "then the rest of the step aside");
        assertInstanceOf(LeaseLoop.Request.Get.class, asked(6_030));
    }

    @Test
    void anotherHoldersLeaseIsTakenOnlyOnceItHasGoneUnchangedForItsDurationAsThisWardenSawIt() {
        loop.began(at(0), "test/warden-gate");
        LeaseRecord theirs = new LeaseRecord(Optional.of("pod-b@node-2"), Optional.of(Duration.ofSeconds(15)),
                Optional.of(WALL.instant()), Optional.of(WALL.instant()), 3);
        LeaseStore.Stored read = stored(theirs);
        asked(0);
        loop.answered(new LeaseLoop.Answer.Lease(Optional.of(read)), at(10));
        assertTrue(loop.state().decided(at(10), Duration.ofSeconds(2)));
        assertEquals(at(3_210), waits(10), "a retry period and the jitter (half of 1.2 retry periods here)");
        long now = 3_210;
        while (now < 15_010) {
            asked(now);
            loop.answered(new LeaseLoop.Answer.Lease(Optional.of(read)), at(now));
            now = waits(now).nanos() / 1_000_000;
        }
        asked(now);
        loop.answered(new LeaseLoop.Answer.Lease(Optional.of(read)), at(now));
        LeaseLoop.Request.Update take = assertInstanceOf(LeaseLoop.Request.Update.class, asked(now),
                "unchanged for 15 s since this warden first saw it");
        assertEquals(4, take.record().transitions());
        loop.answered(new LeaseLoop.Answer.Refused(new LeaseStore.Refused(409, "written", "changed since read")), at(now));
        assertFalse(loop.state().leading(), "another wrote first");
    }

    @Test
    void stoppedWithTheLeaseLetGoItReleasesItThenEnds() {
        leading();
        loop.stop(true);
        assertInstanceOf(LeaseLoop.Request.Update.class, asked(30));
        loop.answered(new LeaseLoop.Answer.Unanswered("timed out"), at(2_030));
        assertInstanceOf(LeaseLoop.Next.Done.class, loop.next(at(2_030)), "a release that failed: the Lease expires instead");
    }
}
