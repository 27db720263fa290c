package dev.warden.gate;

import dev.warden.gate.GateAction.Word;
import dev.warden.lock.FileId;
import dev.warden.time.Moment;
import java.util.Optional;
import java.util.Set;

/**
 * What a warden's gate reaches the world through, one primitive at a time: the gate lock, the Lease, the two lock
 * files, lilbee's supervisor on the switch socket, and the proof of lilbee in the process table. {@link GateRound} is
 * the same for every world; the gate keeper's is the machine's, the simulation's is a seeded model of the pod, the
 * kernel and the kubelet.
 */
public interface GateWorld {

    Moment now();

    /** Takes in what this pod's supervisor sent since the last round (a step-down it asked for among it). */
    void hearSupervisor();

    /** What this warden holds of the gate lock. */
    Observation.Gate gate();

    /** The Lease as last seen, in lease mode. */
    Optional<Observation.Lease> lease();

    /** The gate file at its path, a link not followed. */
    Optional<FileId> gateAtPath();

    /** server.lock at its path, a link not followed. */
    Optional<FileId> serverAtPath();

    /** One take-and-let-go of server.lock (never creating it). */
    Observation.Server probeServer(Optional<FileId> atPath);

    /** Whether a supervisor is connected and believed. */
    boolean supervisorConnected();

    /** The end of the permit the supervisor last reported holding, if it holds one. */
    Optional<Moment> supervisorPermit();

    /** Whether the supervisor answered the last stop said as done (no lilbee, no permit, every word before it heard). */
    boolean supervisorStopDone();

    /** The gate file whose lock the supervisor last reported holding for its lilbee, if any. */
    Optional<FileId> supervisorGate();

    /** When this warden was last asked to step down, if ever. */
    Optional<Moment> stepDownAsked();

    /**
     * The lilbee the supervisor last reported running, if that process is alive, the instance it named, and descends
     * from the supervisor's own process.
     */
    Optional<Reported> reportedLilbee();

    /** Which of {@code wanted} that lilbee holds an exclusive flock on through a descriptor of its own, and has open. */
    Holding holds(Reported lilbee, Set<FileId> wanted);

    /** Take the gate lock if it is free, else wait for it in the kernel. */
    void contend();

    /** Close this warden's descriptors of the gate lock, held or retired. */
    void releaseGate();

    /** No longer hold the gate lock, but keep its descriptor for {@link #unlockGate()}. */
    void retireGate();

    /** flock(LOCK_UN) on the retired gate lock's open file, then close it. */
    void unlockGate();

    /** Lease mode: let the Lease go for a while. */
    void stepAside();

    /** Tell the supervisor. */
    void say(Word word);

    /** Of the files asked about, those a lilbee holds an exclusive flock on, and those it has a descriptor of. */
    record Holding(Set<FileId> locked, Set<FileId> open) {
        public static final Holding NOTHING = new Holding(Set.of(), Set.of());
    }

    /** A lilbee as its supervisor named it. */
    record Reported(long pid, long startTicks, Moment launched) {
    }
}
