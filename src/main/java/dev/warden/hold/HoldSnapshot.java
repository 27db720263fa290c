package dev.warden.hold;

import dev.warden.keeper.KeeperPhase;
import java.util.List;
import java.util.Optional;

/**
 * An immutable picture of warden's locks, published by the lock keeper after every change, so
 * the probes answer from memory without touching the volume.
 *
 * @param phase whether the keeper runs
 * @param locks every configured lock in the order taken
 * @param everHeldAll whether warden has held all its locks at least once (the startup probe)
 */
public record HoldSnapshot(KeeperPhase phase, List<LockStatus> locks, boolean everHeldAll) {

    public static HoldSnapshot notStarted() {
        return new HoldSnapshot(KeeperPhase.NOT_STARTED, List.of(), false);
    }

    public HoldSnapshot {
        locks = List.copyOf(locks);
    }

    public boolean allHeld() {
        return phase == KeeperPhase.RUNNING && !locks.isEmpty() && locks.stream().allMatch(LockStatus::held);
    }

    public Optional<LockStatus> lock(LockKind kind) {
        return locks.stream().filter(l -> l.kind() == kind).findFirst();
    }
}
