package dev.warden.gate.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.time.Moment;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The Lease election's state, step by step, on moments chosen by the test: no clock, no API server, no sleep. */
class LeaseStateTest {

    static final Duration DEADLINE = Duration.ofSeconds(10);
    static final Duration RETRY = Duration.ofSeconds(2);
    static final Moment T0 = new Moment(1_000_000_000_000L);

    static Moment at(long seconds) {
        return T0.plus(Duration.ofSeconds(seconds));
    }

    @Test
    void aLeadRunsTheRenewDeadlineFromTheLastWriteSentNotFromItsAnswer() {
        LeaseState state = LeaseState.initial(T0).began(T0).startedLeading("w0")
                .accepted("w0", Optional.empty(), "w0", at(1));
        assertEquals(Optional.of(at(11)), state.leadingUntil(at(5), DEADLINE));
        assertEquals(Optional.empty(), state.leadingUntil(at(11), DEADLINE), "over at the deadline");
        assertEquals(Optional.of(at(14)), state.accepted("w0", Optional.empty(), "w0", at(4)).leadingUntil(at(11), DEADLINE));
    }

    @Test
    void writesNamingAnotherAndTheElectorsWordAloneMakeNoLead() {
        LeaseState other = LeaseState.initial(T0).began(T0).startedLeading("w0").accepted("w1", Optional.empty(), "w0", at(1));
        assertEquals(Optional.empty(), other.leadingUntil(at(2), DEADLINE), "no write of its own");
        LeaseState stopped = LeaseState.initial(T0).accepted("w0", Optional.empty(), "w0", at(1)).startedLeading("w0")
                .stoppedLeading();
        assertEquals(Optional.empty(), stopped.leadingUntil(at(2), DEADLINE), "the elector stepped down");
    }

    @Test
    void aReadNamingThisWardenAwaitsItsOwnWriteBeforeItIsAnAnswer() {
        LeaseState begun = LeaseState.initial(T0).began(T0);
        assertFalse(begun.decided(at(1), RETRY));
        LeaseState mine = begun.read(Optional.of("w0"), Optional.of(Instant.EPOCH), "w0");
        assertFalse(mine.decided(at(1), RETRY), "its previous run's renewal is no answer: the write that follows is");
        assertTrue(mine.accepted("w0", Optional.empty(), "w0", at(1)).decided(at(1), RETRY));
        assertTrue(mine.failed().decided(at(1), RETRY));
        assertTrue(begun.read(Optional.of("w1"), Optional.empty(), "w0").decided(at(1), RETRY), "another's Lease is an answer");
        assertTrue(begun.decided(at(3), RETRY), "nor longer than a request may take");
        assertTrue(LeaseState.initial(T0).decided(T0, RETRY), "not begun: nothing to wait for");
    }

    @Test
    void anElectorSilentLongerThanFiveRetriesOrThePatienceIsStalled() {
        LeaseState asked = LeaseState.initial(T0).asked(at(1));
        assertEquals(Optional.empty(), asked.stalled(at(11), Duration.ofSeconds(1), RETRY), "five retries: still working");
        assertEquals(Optional.of(Duration.ofSeconds(11)), asked.stalled(at(12), Duration.ofSeconds(1), RETRY));
        assertEquals(Optional.empty(), asked.stalled(at(12), Duration.ofSeconds(30), RETRY), "a longer patience");
    }
}
