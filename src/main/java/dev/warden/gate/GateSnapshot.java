package dev.warden.gate;

import dev.warden.hold.HoldSnapshot.Phase;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Optional;

/**
 * An immutable picture of the election and of lilbee's server lock, published by the gate keeper
 * after every round, so the probes answer from memory without touching the volume.
 *
 * @param started whether this pod's lilbee may run (sticky, as Kubernetes reads a startup probe once)
 * @param note what this warden waits for, or what an operator should know, for the probe and the log
 * @param lease in lease mode, the election's state
 */
public record GateSnapshot(Phase phase, Optional<Path> gateLock, Optional<Path> serverLock, GateState gate,
        ServerLockState server, boolean started, Optional<String> note, Optional<LeaseView> lease) {

    public static GateSnapshot notStarted() {
        return new GateSnapshot(Phase.NOT_STARTED, Optional.empty(), Optional.empty(),
                new GateState.Waiting("not started"), new ServerLockState.NotInPod(), false, Optional.empty(),
                Optional.empty());
    }

    /**
     * Lease mode: the Lease's name, this warden's identity, whether it holds the Lease, who does and when they last
     * renewed it, as last seen.
     */
    public record LeaseView(String name, String identity, boolean leading, Optional<String> holder,
            Optional<Instant> renewed) {
    }

    /**
     * This pod serves: its warden holds the gate and is started, its lilbee holds the {@code server.lock} at
     * the path (not one a reset replaced), and in lease mode this warden holds the Lease.
     */
    public boolean serving() {
        return phase == Phase.RUNNING && started && gate instanceof GateState.Elected
                && server instanceof ServerLockState.InPod inPod && !inPod.replacedFile()
                && lease.map(LeaseView::leading).orElse(true);
    }
}
