package dev.warden.gate.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.Await;
import dev.warden.time.MonotonicClock;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The election's loop on a Lease kept in memory as the API server keeps one (a version each write must name, refused
 * with 409 when it changed since): taking it, renewing it, stepping down at the renew deadline, releasing it, stepping
 * aside for another contender, a restart in place.
 */
class LeaseElectionTest {

    private final MemoryLeases lease = new MemoryLeases();
    private final List<LeaseElection> elections = new ArrayList<>();

    @AfterEach
    void stop() {
        lease.answer();
        elections.forEach(e -> e.close(false));
    }

    private LeaseElection election(String identity) {
        LeaseElection election = new LeaseElection(new LeaseElection.Settings("warden-gate", Optional.empty(), identity,
                Duration.ofSeconds(1), Duration.ofMillis(400), Duration.ofMillis(100)), MonotonicClock.SYSTEM, Clock.systemUTC(), Math::random);
        elections.add(election);
        election.start(lease, Optional.empty());
        return election;
    }

    /** Once {@code leader} leads: another contender, {@code identity}, that has read the Lease naming it. */
    private LeaseElection standingBy(LeaseElection leader, String identity) {
        Await.until(leader.identity() + " leads", leader::leading);
        LeaseElection standby = election(identity);
        Await.until(identity + " has read the Lease", () -> standby.holder().equals(Optional.of(leader.identity())));
        return standby;
    }

    /** A Lease as the API server keeps it; told to, it refuses the holder's renewals, or hangs every read. */
    private static final class MemoryLeases implements LeaseStore {
        private LeaseRecord record;
        private int version;
        private String refusing;
        private volatile CountDownLatch hanging;

        @Override
        public Optional<Stored> get() throws InterruptedException {
            CountDownLatch latch = hanging;
            if (latch != null) {
                latch.await();
            }
            synchronized (this) {
                return Optional.ofNullable(record).map(r -> new Stored(r, version));
            }
        }

        @Override
        public synchronized Stored create(LeaseRecord created) throws Refused {
            if (record != null) {
                throw new Refused(409, "created", "the Lease already exists");
            }
            record = created;
            return new Stored(record, ++version);
        }

        @Override
        public synchronized Stored update(Stored read, LeaseRecord updated) throws Refused {
            if (!read.version().equals(version)) {
                throw new Refused(409, "written", "the Lease changed since it was read");
            }
            if (refusing != null && updated.holder().equals(Optional.of(refusing))) {
                throw new Refused(504, "written", "the API server timed the write out");
            }
            record = updated;
            return new Stored(record, ++version);
        }

        /** As if written before this test's warden started (by its previous run). */
        synchronized void written(LeaseRecord earlier) {
            record = earlier;
            version++;
        }

        synchronized void refuseWritesNaming(String identity) {
            refusing = identity;
        }

        synchronized Optional<LeaseRecord> record() {
            return Optional.ofNullable(record);
        }

        void hang() {
            hanging = new CountDownLatch(1);
        }

        void answer() {
            CountDownLatch latch = hanging;
            hanging = null;
            if (latch != null) {
                latch.countDown();
            }
        }

        @Override
        public String describe() {
            return "test/warden-gate";
        }

        @Override
        public void close() {
            answer();
        }
    }

    @Test
    void theFirstContenderCreatesAndHoldsTheLeaseAndRenewsIt() throws Exception {
        LeaseElection election = election("w0");
        Await.until("w0 leads", election::leading);
        LeaseRecord first = lease.record().orElseThrow();
        assertEquals(Optional.of("w0"), first.holder());
        assertEquals(Optional.of(Duration.ofSeconds(1)), first.duration());
        Await.until("renewed", () -> lease.record().orElseThrow().renewTime().orElseThrow().isAfter(first.renewTime().orElseThrow()));
        assertEquals(0, lease.record().orElseThrow().transitions(), "a renewal is no transition");
        assertEquals(first.acquireTime(), lease.record().orElseThrow().acquireTime(), "nor a new acquisition");
    }

    /**
     * An API server that stops taking renewals until the renew deadline: the warden steps down and leaves the Lease to
     * expire (a release would let another take it a renew deadline after the last renewal instead of a Lease duration,
     * the margin its lilbee has to stop), and contends again, leading once its writes are taken again.
     */
    @Test
    void aLeaderWhoseRenewalsFailUntilTheDeadlineStepsDownLeavesTheLeaseToExpireAndContendsAgain() throws Exception {
        LeaseElection election = election("w0");
        Await.until("w0 holds the Lease", () -> election.holder().equals(Optional.of("w0")) && election.leading());
        lease.refuseWritesNaming("w0");
        Await.until("stepped down", () -> !election.leading());
        assertEquals(Optional.of("w0"), lease.record().orElseThrow().holder(), "not released: it expires");
        lease.refuseWritesNaming(null);
        Await.until("w0 leads again", election::leading);
    }

    /** A warden stopping with its lilbee stopped releases the Lease; one stopped to let it expire does not. */
    @Test
    void closingLetsTheLeaseGoOnlyWhenToldTo() throws Exception {
        LeaseElection election = election("w0");
        Await.until("w0 leads", election::leading);
        election.close(false);
        assertEquals(Optional.of("w0"), lease.record().orElseThrow().holder(), "left to expire");
        LeaseElection again = election("w0");
        Await.until("w0 leads again", again::leading);
        again.close(true);
        assertEquals(Optional.empty(), lease.record().orElseThrow().holder(), "released");
    }

    /** Another contender takes the Lease only once it has gone unchanged for its duration, as it watched it. */
    @Test
    void aStoppedLeadersLeaseIsTakenOnceItHasGoneUnrenewedForItsDuration() throws Exception {
        LeaseElection first = election("w0");
        LeaseElection second = standingBy(first, "w1");
        long stopped = System.nanoTime();
        first.close(false);
        Await.until("w1 leads", second::leading);
        assertTrue(Duration.ofNanos(System.nanoTime() - stopped).compareTo(Duration.ofMillis(900)) > 0,
                "not before the Lease's duration (1 s) from the last change w1 saw");
        assertEquals(1, lease.record().orElseThrow().transitions());
    }

    /** Stepping aside releases the Lease and stays out long enough for another contender to take it. */
    @Test
    void aLeaderThatStepsAsideLetsAnotherTakeTheLeaseAtOnce() throws Exception {
        LeaseElection first = election("w0");
        LeaseElection second = standingBy(first, "w1");
        long aside = System.nanoTime();
        first.stepAside();
        Await.until("w1 leads", second::leading);
        assertTrue(Duration.ofNanos(System.nanoTime() - aside).compareTo(Duration.ofMillis(900)) < 0,
                "released: w1 did not wait out the Lease's duration");
        assertFalse(first.leading());
    }

    /**
     * An elector that stops asking (here a read the API server never answers) is stalled once enough silence has passed
     * (LeaseStateTest counts it): warden's liveness probe says so, and a restart lets the warden contend again.
     */
    @Test
    void anElectorThatStopsAskingTheApiServerIsStalled() throws Exception {
        LeaseElection election = election("w0");
        Await.until("w0 holds the Lease", () -> election.holder().equals(Optional.of("w0")));
        assertEquals(Optional.empty(), election.stalled(Duration.ofMillis(200)), "renewing every 100 ms: not stalled");
        lease.hang();
        Await.until("stalled", () -> election.stalled(Duration.ofMillis(200)).isPresent());
        assertTrue(election.stalled(Duration.ofMinutes(1)).isEmpty(), "a longer patience waits longer");
        election.close();
        assertEquals(Optional.empty(), election.stalled(Duration.ofMillis(200)), "a closed election is not stalled");
    }

    /**
     * A warden restarted in its pod finds the Lease naming it: it renews it at once, and leads from that write of its
     * own, never from the renewal time its previous run wrote (a wall-clock reading).
     */
    @Test
    void aRestartedWardenRenewsTheLeaseNamingItAndLeadsFromItsOwnWrite() {
        Instant now = Instant.now();
        LeaseRecord previous = new LeaseRecord(Optional.of("w0"), Optional.of(Duration.ofSeconds(1)),
                Optional.of(now.minusSeconds(60)), Optional.of(now.minusMillis(50)), 3);
        lease.written(previous);
        LeaseElection election = election("w0");
        Await.until("leading", election::leading);
        LeaseRecord renewed = lease.record().orElseThrow();
        assertTrue(renewed.renewTime().orElseThrow().isAfter(previous.renewTime().orElseThrow()), "renewed by this run");
        assertEquals(3, renewed.transitions(), "still its own: no transition");
        assertEquals(previous.acquireTime(), renewed.acquireTime());
    }

    /** Its renewal refused, a restarted warden has its answer and does not lead: its previous run's renewal proves nothing. */
    @Test
    void aRestartedWardenWhoseRenewalIsRefusedDoesNotLead() {
        Instant now = Instant.now();
        lease.written(new LeaseRecord(Optional.of("w0"), Optional.of(Duration.ofSeconds(1)), Optional.of(now.minusSeconds(60)),
                Optional.of(now.minusMillis(50)), 0));
        lease.refuseWritesNaming("w0");
        LeaseElection election = election("w0");
        Await.until("the write answered (refused)", () -> election.state().answered());
        assertFalse(election.leading(), "not leading on a renewal of its previous run's");
    }
}
