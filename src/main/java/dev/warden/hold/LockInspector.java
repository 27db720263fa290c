package dev.warden.hold;

import dev.warden.config.LilbeePaths;
import dev.warden.lock.FileLocker;
import dev.warden.lock.LockException;
import dev.warden.lock.LockProbe;
import dev.warden.lock.ProcLocks;
import jakarta.inject.Singleton;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * Looks at lilbee's server locks without keeping them, for {@code warden status}. A free lock is
 * taken and let go at once; nothing is created, so looking at a data dir never changes it.
 */
@Singleton
public class LockInspector {

    private final FileLocker locker;
    private final ProcLocks procLocks;
    private final ScopeOwnerFile ownerFile;

    public LockInspector(FileLocker locker, ProcLocks procLocks, ScopeOwnerFile ownerFile) {
        this.locker = locker;
        this.procLocks = procLocks;
        this.ownerFile = ownerFile;
    }

    /** Every lock of {@code paths}, in the order a server takes them, then the gate where a gate-mode warden made one. */
    public List<LockLook> look(LilbeePaths paths) {
        List<LockLook> looks = new ArrayList<>();
        paths.scopeLock().ifPresent(lock -> looks.add(look(LockKind.SCOPE, lock,
                Optional.of(ownerFile.read(paths.scopeOwner().orElseThrow())))));
        looks.add(look(LockKind.DATA_DIR, paths.serverLock(), Optional.empty()));
        LockLook gate = look(LockKind.GATE, paths.gateLock(), Optional.empty());
        if (!gate.state().equals("absent")) {
            looks.add(gate);
        }
        return List.copyOf(looks);
    }

    private LockLook look(LockKind kind, Path path, Optional<ScopeOwner> owner) {
        try {
            LockProbe probe = locker.probe(path);
            return switch (probe) {
                case ABSENT -> new LockLook(kind, path, "absent", OptionalLong.empty(), Optional.empty(), Optional.empty());
                case FREE -> new LockLook(kind, path, "free", OptionalLong.empty(), Optional.empty(), Optional.empty());
                case HELD -> new LockLook(kind, path, "held",
                        procLocks.holderOf(path), owner, Optional.empty());
            };
        } catch (LockException e) {
            return new LockLook(kind, path, "error", OptionalLong.empty(), Optional.empty(), Optional.of(e.getMessage()));
        }
    }
}
