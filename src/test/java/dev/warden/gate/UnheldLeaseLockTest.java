package dev.warden.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.api.model.coordination.v1.LeaseBuilder;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.LeaderElectionRecord;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import org.junit.jupiter.api.Test;

class UnheldLeaseLockTest {

    private static final Duration OWN = Duration.ofSeconds(15);

    @Test
    void theChartsLeaseWithItsDurationAloneIsFreeAndNeverRenewed() {
        Lease lease = new LeaseBuilder().withNewMetadata().withName("w-warden-gate").endMetadata()
                .withNewSpec().withLeaseDurationSeconds(20).endSpec().build();
        LeaderElectionRecord record = UnheldLeaseLock.read(lease, OWN);
        assertNull(record.getHolderIdentity());
        assertEquals(Duration.ofSeconds(20), record.getLeaseDuration());
        assertEquals(Instant.EPOCH, record.getRenewTime().toInstant());
        assertEquals(Instant.EPOCH, record.getAcquireTime().toInstant());
        assertEquals(0, record.getLeaderTransitions());
    }

    @Test
    void aLeaseWithoutASpecTakesThisWardensDuration() {
        LeaderElectionRecord record = UnheldLeaseLock.read(new LeaseBuilder().withNewMetadata().withName("l").endMetadata().build(), OWN);
        assertEquals(OWN, record.getLeaseDuration());
        assertNull(record.getHolderIdentity());
    }

    @Test
    void aHeldLeaseReadsAsItsHolderWroteIt() {
        ZonedDateTime acquired = ZonedDateTime.of(2026, 12, 4, 10, 0, 0, 0, ZoneOffset.UTC);
        ZonedDateTime renewed = acquired.plusMinutes(5);
        Lease lease = new LeaseBuilder().withNewMetadata().withName("l").endMetadata().withNewSpec().withHolderIdentity("pod-a@node-1")
                .withLeaseDurationSeconds(15).withAcquireTime(acquired).withRenewTime(renewed).withLeaseTransitions(4).endSpec().build();
        LeaderElectionRecord record = UnheldLeaseLock.read(lease, Duration.ofSeconds(99));
        assertEquals("pod-a@node-1", record.getHolderIdentity());
        assertEquals(Duration.ofSeconds(15), record.getLeaseDuration());
        assertEquals(acquired.toInstant(), record.getAcquireTime().toInstant());
        assertEquals(renewed.toInstant(), record.getRenewTime().toInstant());
        assertEquals(4, record.getLeaderTransitions());
    }
}
