package dev.warden.gate;

import dev.warden.lock.FileId;
import dev.warden.lock.LockProbe;
import dev.warden.time.Moment;
import java.time.Instant;
import java.util.Optional;
import java.util.Set;

/**
 * One round's look at the world, taken before the gate decides ({@link GateDecision}) and never changed after: what
 * this warden holds of the gate, the Lease as last seen, the gate file and {@code server.lock} at their paths, and
 * what this pod's lilbee supervisor reports, checked against the process table.
 *
 * @param gateAtPath the gate file at its path now (device and inode), empty when there is none
 * @param stepDown when this warden was last asked to step down (its API, its CLI, or its supervisor on SIGTERM), if
 *     ever: an election since then is not affected
 */
public record Observation(Moment now, Gate gate, Optional<Lease> lease, Optional<FileId> gateAtPath, Server server,
        Supervisor supervisor, Optional<Moment> stepDown) {

    public Observation(Moment now, Gate gate, Optional<Lease> lease, Optional<FileId> gateAtPath, Server server,
            Supervisor supervisor) {
        this(now, gate, lease, gateAtPath, server, supervisor, Optional.empty());
    }

    /** What this warden holds of the gate lock. */
    public sealed interface Gate {

        /** This warden holds a lock on {@code file}, and whether that file is still the one at the path. */
        record Held(FileId file, boolean atPath) implements Gate {
        }

        /** It holds none: another warden does, or it has not been tried yet. */
        record NotHeld() implements Gate {
        }

        /**
         * It held a lock on {@code file} through a descriptor it still has, and the lock is gone: some process with a
         * descriptor of the same open file (the lilbee it was passed to, or one that took it from lilbee) unlocked it.
         * Never held from here: another pod may be elected already.
         */
        record Lost(FileId file) implements Gate {
        }

        /**
         * This warden holds a lock on {@code file} that is not proven to exclude the other pods: taken at once while its
         * heartbeat named a holder that has not let go ({@code shared} false: watching whether it still beats), or held
         * by another pod at once through a mount whose locks do not reach this one ({@code shared}). Kept, never served:
         * {@code why} names the mount and the fix.
         */
        record Unproven(FileId file, boolean shared, String why) implements Gate {
        }

        /**
         * It cannot be taken at all ({@code why} names the path and the fix): tried again in file mode; in lease mode
         * (a volume that cannot lock) the Lease alone elects.
         */
        record Unlockable(String why) implements Gate {
        }
    }

    /**
     * The Lease election, in lease mode.
     *
     * @param decided whether its first read has been answered: a warden restarted beside its serving lilbee does not
     *     know yet whether it still leads
     * @param leadingUntil while this warden leads: the moment its lead ends unless renewed (its last renewal the API
     *     server took, plus the renew deadline)
     * @param holder who holds it as last seen (empty: nobody, or not read yet), for the status
     * @param renewed when it was last renewed, as last read or written (the wall clock's), for the status
     */
    public record Lease(String name, boolean decided, Optional<Moment> leadingUntil, Optional<String> holder,
            Optional<Instant> renewed) {

        public Lease(String name, boolean decided, Optional<Moment> leadingUntil) {
            this(name, decided, leadingUntil, Optional.empty(), Optional.empty());
        }

        public boolean leading(Moment now) {
            return leadingUntil.filter(now::isBefore).isPresent();
        }
    }

    /**
     * {@code server.lock}: the file at the path (empty when there is none), and, while this pod is elected and its
     * lilbee holds no lock on that file, one take-and-let-go of it (empty when not looked at).
     */
    public record Server(Optional<FileId> atPath, Optional<LockProbe> probe, Optional<String> failure) {

        public static Server unlooked(Optional<FileId> atPath) {
            return new Server(atPath, Optional.empty(), Optional.empty());
        }
    }

    /**
     * This pod's lilbee supervisor, as its last report says, over the switch socket.
     *
     * @param connected whether a supervisor is connected and believed now
     * @param lilbee the lilbee it runs, when that process is alive and is the instance it named
     * @param permit the end of the permit it holds, when it holds one (given by this warden or by its previous run)
     * @param stopDone whether it answered the last stop said as done, every word said before it heard: no lilbee runs
     *     and it holds no permit
     * @param gate the gate file whose lock it holds for its lilbee (a start's descriptor, which it keeps for as long as
     *     that lilbee lives, and which lilbee dies with it), if any: its word, which says which gate a lilbee runs
     *     under, never that the gate is held
     */
    public record Supervisor(boolean connected, Optional<Lilbee> lilbee, Optional<Moment> permit, boolean stopDone,
            Optional<FileId> gate) {

        public Supervisor(boolean connected, Optional<Lilbee> lilbee, Optional<Moment> permit, boolean stopDone) {
            this(connected, lilbee, permit, stopDone, Optional.empty());
        }

        public Supervisor(boolean connected, Optional<Lilbee> lilbee, Optional<Moment> permit) {
            this(connected, lilbee, permit, false);
        }

        public Supervisor(boolean connected, Optional<Lilbee> lilbee) {
            this(connected, lilbee, Optional.empty());
        }

        public static Supervisor absent() {
            return new Supervisor(false, Optional.empty());
        }
    }

    /**
     * The lilbee this pod's supervisor runs: pid and start time (which name the instance), when the supervisor started
     * it, which of the files asked about it holds an exclusive flock on through a descriptor of its own (its
     * {@code /proc/<pid>/fdinfo}), and which it has a descriptor of at all (those it holds among them).
     */
    public record Lilbee(long pid, long startTicks, Moment launched, Set<FileId> holds, Set<FileId> opens) {

        /** One whose every descriptor of the files asked about holds its lock. */
        public Lilbee(long pid, long startTicks, Moment launched, Set<FileId> holds) {
            this(pid, startTicks, launched, holds, holds);
        }
    }
}
