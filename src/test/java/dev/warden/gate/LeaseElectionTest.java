package dev.warden.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.Await;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderElector;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.LeaderElectionRecord;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.Lock;
import java.time.Duration;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * warden's callbacks inside fabric8's real leader elector, on a Lease kept in memory: the elector's
 * steps run the callbacks, and one that throws ends the election without ending the elector's future,
 * which {@link LeaseElection} waits on before it contends again.
 */
class LeaseElectionTest {

    private final ExecutorService executor = Executors.newCachedThreadPool();

    private final MemoryLease lease = new MemoryLease("w0");

    @AfterEach
    void stop() {
        lease.answer();
        executor.shutdownNow();
    }

    private static LeaseElection election() {
        return new LeaseElection(new LeaseElection.Settings("warden-gate", Optional.empty(), "w0", Duration.ofSeconds(2),
                Duration.ofMillis(400), Duration.ofMillis(100)));
    }

    /** A Lease as the API server keeps it; once told to, it refuses the holder's renewals but takes its release. */
    private static final class MemoryLease implements Lock {
        private final String identity;
        private LeaderElectionRecord record;
        private boolean refusingRenewals;
        /** Counted down to answer again: until then every read hangs, as one the API server never answers. */
        private volatile CountDownLatch hanging;

        MemoryLease(String identity) {
            this.identity = identity;
        }

        @Override
        public LeaderElectionRecord get(KubernetesClient client) {
            CountDownLatch latch = hanging;
            if (latch != null) {
                try {
                    latch.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            synchronized (this) {
                return record;
            }
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
        public synchronized void create(KubernetesClient client, LeaderElectionRecord created) {
            if (record != null) {
                throw new KubernetesClientException("the Lease already exists", 409, null);
            }
            record = created;
        }

        @Override
        public synchronized void update(KubernetesClient client, LeaderElectionRecord updated) {
            if (refusingRenewals && identity.equals(updated.getHolderIdentity())) {
                throw new KubernetesClientException("the API server timed the write out", 504, null);
            }
            record = updated;
        }

        /** As if written before this test's warden started (by its previous run). */
        synchronized void written(LeaderElectionRecord earlier) {
            record = earlier;
        }

        synchronized void refuseRenewals() {
            refusingRenewals = true;
        }

        synchronized Optional<LeaderElectionRecord> record() {
            return Optional.ofNullable(record);
        }

        @Override
        public String identity() {
            return identity;
        }

        @Override
        public String describe() {
            return "an in-memory Lease for " + identity;
        }
    }

    /**
     * An API server that stops taking renewals until the renew deadline, then takes the release: fabric8
     * releases the Lease (it names no holder) and its elector ends, so warden contends again. The release
     * tells the callbacks of a leader with no name; a callback that failed on it left the warden out of
     * the election for good (seen against a real kube-apiserver thawed just after the deadline).
     */
    @Test
    void aLeaderWhoseRenewalsFailUntilTheDeadlineReleasesTheLeaseAndItsElectorEnds() throws Exception {
        LeaseElection election = election();
        CompletableFuture<?> elector = new LeaderElector(null, election.electionConfig(lease), executor).start();
        Await.until("w0 holds the Lease", () -> election.holder().equals(Optional.of("w0")));
        assertEquals("w0", lease.record().orElseThrow().getHolderIdentity());

        lease.refuseRenewals();
        // Bounded only so that a hang fails the test: the deadline is 400 ms.
        elector.get(10, TimeUnit.SECONDS);
        assertNull(lease.record().orElseThrow().getHolderIdentity(), "fabric8 released the Lease");
        assertEquals(Optional.empty(), election.holder(), "a released Lease has no holder");
    }

    /**
     * An elector that stops asking (here a read the API server never answers; fabric8's elector waits on it holding its
     * own lock) is stalled once enough silence has passed (LeaseStateTest counts it): warden's liveness probe says so,
     * and a restart lets the warden contend again.
     */
    @Test
    void anElectorThatStopsAskingTheApiServerIsStalled() throws Exception {
        LeaseElection election = election();
        new LeaderElector(null, election.electionConfig(lease), executor).start();
        Await.until("w0 holds the Lease", () -> election.holder().equals(Optional.of("w0")));
        assertEquals(Optional.empty(), election.stalled(Duration.ofMillis(200)), "renewing every 100 ms: not stalled");
        lease.hang();
        Await.until("stalled", () -> election.stalled(Duration.ofMillis(200)).isPresent());
        assertTrue(election.stalled(Duration.ofMinutes(1)).isEmpty(), "a longer patience waits longer");
        election.close();
        assertEquals(Optional.empty(), election.stalled(Duration.ofMillis(200)), "a closed election is not stalled");
    }

    /**
     * A warden restarted in its pod finds the Lease naming it: the elector renews it at once, and the warden leads from
     * that write of its own, never from the renewal time its previous run wrote (a wall-clock reading).
     */
    @Test
    void aRestartedWardenRenewsTheLeaseNamingItAndLeadsFromItsOwnWrite() {
        ZonedDateTime now = ZonedDateTime.now(ZoneOffset.UTC);
        LeaderElectionRecord previous = new LeaderElectionRecord("w0", Duration.ofSeconds(2), now.minusSeconds(60),
                now.minusNanos(50_000_000), 0);
        lease.written(previous);
        LeaseElection election = election();
        new LeaderElector(null, election.electionConfig(lease), executor).start();
        Await.until("leading", election::leading);
        assertTrue(lease.record().orElseThrow().getRenewTime().isAfter(previous.getRenewTime()), "renewed by this run");
    }

    /** Its renewal refused, a restarted warden has its answer and does not lead: its previous run's renewal proves nothing. */
    @Test
    void aRestartedWardenWhoseRenewalIsRefusedDoesNotLead() {
        ZonedDateTime now = ZonedDateTime.now(ZoneOffset.UTC);
        lease.written(new LeaderElectionRecord("w0", Duration.ofSeconds(2), now.minusSeconds(60), now.minusNanos(50_000_000), 0));
        lease.refuseRenewals();
        LeaseElection election = election();
        new LeaderElector(null, election.electionConfig(lease), executor).start();
        Await.until("the write answered (refused)", () -> election.state().answered());
        assertFalse(election.leading(), "not leading on a renewal of its previous run's");
    }
}
