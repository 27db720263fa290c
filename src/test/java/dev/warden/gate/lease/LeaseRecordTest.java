package dev.warden.gate.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.warden.time.Moment;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** client-go's decision of what to write, pure, and the Lease's spec read and written as the API server keeps it. */
class LeaseRecordTest {

    private static final Duration OWN = Duration.ofSeconds(15);
    private static final Instant WALL = Instant.parse("2026-12-06T09:00:00.123456Z");
    private static final Moment SEEN = new Moment(1_000_000_000L);

    private static final ObjectMapper JSON = new ObjectMapper();

    private static LeaseRecord held(String holder, int transitions) {
        return new LeaseRecord(Optional.of(holder), Optional.of(Duration.ofSeconds(20)), Optional.of(WALL.minusSeconds(300)),
                Optional.of(WALL.minusSeconds(1)), transitions);
    }

    @Test
    void anotherHoldersLeaseIsTakenOnlyOnceItWentUnchangedForItsOwnDuration() {
        LeaseRecord lease = held("pod-a@node-1", 4);
        assertEquals(Optional.empty(), lease.next("pod-b@node-2", OWN, SEEN, SEEN.plus(Duration.ofSeconds(19)), WALL),
                "its duration (20 s), not this warden's (15 s), from when it was seen so");
        LeaseRecord taken = lease.next("pod-b@node-2", OWN, SEEN, SEEN.plus(Duration.ofSeconds(20)), WALL).orElseThrow();
        assertEquals(new LeaseRecord(Optional.of("pod-b@node-2"), Optional.of(OWN), Optional.of(WALL), Optional.of(WALL), 5), taken);
    }

    @Test
    void itsOwnLeaseIsRenewedKeepingItsAcquisition() {
        LeaseRecord lease = held("pod-a@node-1", 4);
        LeaseRecord renewed = lease.next("pod-a@node-1", OWN, SEEN, SEEN, WALL).orElseThrow();
        assertEquals(new LeaseRecord(Optional.of("pod-a@node-1"), Optional.of(OWN), lease.acquireTime(), Optional.of(WALL), 4), renewed);
    }

    @Test
    void aReleasedLeaseOrOneNeverHeldIsFreeAtOnce() {
        LeaseRecord released = held("pod-a@node-1", 4).released(WALL);
        assertEquals(new LeaseRecord(Optional.empty(), Optional.of(Duration.ofSeconds(1)), Optional.of(WALL), Optional.of(WALL), 4),
                released);
        assertEquals(Optional.of(5), released.next("pod-b", OWN, SEEN, SEEN, WALL).map(LeaseRecord::transitions));
    }

    /** The chart makes the Lease with its duration alone: no holder, no times. */
    @Test
    void theChartsLeaseReadsAsFreeWithItsDuration() throws Exception {
        LeaseRecord chart = ApiLeases.record(JSON.readTree("{\"leaseDurationSeconds\": 20}"));
        assertEquals(new LeaseRecord(Optional.empty(), Optional.of(Duration.ofSeconds(20)), Optional.empty(), Optional.empty(), 0),
                chart);
        assertEquals(new LeaseRecord(Optional.empty(), Optional.empty(), Optional.empty(), Optional.empty(), 0),
                ApiLeases.record(JSON.missingNode()), "a Lease without a spec");
        assertEquals(Optional.of("w"), chart.next("w", OWN, SEEN, SEEN, WALL).flatMap(LeaseRecord::holder));
    }

    @Test
    void aSpecIsWrittenAsClientGoWritesItAndReadsBackTheSame() throws Exception {
        LeaseRecord record = new LeaseRecord(Optional.of("pod-a@node-1"), Optional.of(OWN), Optional.of(WALL.minusSeconds(60)),
                Optional.of(WALL), 2);
        ObjectNode spec = JSON.createObjectNode();
        ApiLeases.write(spec, record);
        assertEquals("{\"holderIdentity\":\"pod-a@node-1\",\"leaseDurationSeconds\":15,\"acquireTime\":\"2026-12-06T08:59:00.123456Z\","
                + "\"renewTime\":\"2026-12-06T09:00:00.123456Z\",\"leaseTransitions\":2}", JSON.writeValueAsString(spec));
        assertEquals(record, ApiLeases.record(spec));
        assertEquals(Optional.of(Instant.parse("2026-12-06T09:00:00.123456Z")),
                ApiLeases.record(JSON.readTree("{\"renewTime\": \"2026-12-06T10:00:00.123456+01:00\"}")).renewTime(),
                "an offset other than Z");
    }
}
