package dev.warden.engine;

import dev.warden.lock.FileLocker;
import dev.warden.lock.LockException;
import dev.warden.lock.ProcLocks;
import jakarta.inject.Singleton;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** Looks at an engine dir for {@code warden status} and {@code GET /api/v1/status}; changes nothing. */
@Singleton
public class EngineInspector {

    private final EngineUsers users;
    private final EngineRecords records;
    private final EngineIdentity identity;
    private final EngineClient client;
    private final FileLocker locker;
    private final ProcLocks procLocks;

    public EngineInspector(EngineUsers users, EngineRecords records, EngineIdentity identity, EngineClient client,
            FileLocker locker, ProcLocks procLocks) {
        this.users = users;
        this.records = records;
        this.identity = identity;
        this.client = client;
        this.locker = locker;
        this.procLocks = procLocks;
    }

    /** Every dir of {@code dirs}, slot first. */
    public List<EngineLook> look(EngineDirs dirs, String reaperLockName) {
        return dirs.entries().stream().map(e -> look(e.role(), e.dir(), reaperLockName)).toList();
    }

    private EngineLook look(String role, EngineDir dir, String reaperLockName) {
        if (!java.nio.file.Files.isDirectory(dir.root())) {
            return new EngineLook(role, dir.root(), false, List.of(), List.of(), List.of(), List.of(), "free");
        }
        List<EngineLook.RecordLook> looks = new ArrayList<>();
        EngineRecords.Scan scan = records.scan(dir);
        for (EngineRecord record : scan.records()) {
            String ours = switch (identity.of(record)) {
                case Identity.Ours o -> "yes";
                case Identity.Gone g -> "gone";
                case Identity.Stranger s -> "no: " + s.reason();
            };
            looks.add(new EngineLook.RecordLook(record.file().getFileName().toString(), record.group(), record.pid(),
                    record.pgid().isPresent() ? Optional.of(record.pgid().getAsLong()) : Optional.empty(),
                    record.proxyPort().isPresent() ? Optional.of(record.proxyPort().getAsInt()) : Optional.empty(),
                    ours, identity.endpoint(record).map(client::answers).orElse(false)));
        }
        List<String> markers = dir.keepWarmMarkers().stream().map(p -> p.getFileName().toString()).toList();
        return new EngineLook(role, dir.root(), true, users.liveIds(dir), markers, looks, scan.unreadable(), reaperLock(dir.reaperLock(reaperLockName)));
    }

    private String reaperLock(Path lock) {
        try {
            return switch (locker.probe(lock)) {
                case ABSENT, FREE -> "free";
                case HELD -> "held by " + procLocks.describeHolder(lock);
            };
        } catch (LockException e) {
            return "error: " + e.getMessage();
        }
    }
}
