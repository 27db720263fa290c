package dev.warden.gate;

import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.api.model.coordination.v1.LeaseSpec;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.LeaderElectionRecord;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.LeaseLock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.Optional;

/**
 * fabric8's Lease lock, reading too a Lease that no one has held yet. The chart makes the Lease itself, so that its
 * Role need not create one (RBAC cannot name what a create makes), and sets only its duration: a renewal time in the
 * chart would be put back by every {@code helm upgrade}, under the holder. fabric8's own reading of such a Lease fails
 * (its record requires both times), every retry, so no warden would ever lead.
 *
 * <p>A missing time reads as the epoch, never renewed, so such a Lease is free; a missing duration as this warden's own.
 */
final class UnheldLeaseLock extends LeaseLock {

    private static final ZonedDateTime NEVER = Instant.EPOCH.atZone(ZoneOffset.UTC);

    private final Duration duration;

    UnheldLeaseLock(String namespace, String name, String identity, Duration duration) {
        super(namespace, name, identity);
        this.duration = duration;
    }

    @Override
    protected LeaderElectionRecord toRecord(Lease lease) {
        return read(lease, duration);
    }

    static LeaderElectionRecord read(Lease lease, Duration duration) {
        LeaseSpec spec = Optional.ofNullable(lease.getSpec()).orElseGet(LeaseSpec::new);
        return new LeaderElectionRecord(spec.getHolderIdentity(),
                Optional.ofNullable(spec.getLeaseDurationSeconds()).map(Duration::ofSeconds).orElse(duration),
                Optional.ofNullable(spec.getAcquireTime()).orElse(NEVER), Optional.ofNullable(spec.getRenewTime()).orElse(NEVER),
                Optional.ofNullable(spec.getLeaseTransitions()).orElse(0));
    }
}
