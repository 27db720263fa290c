package dev.warden.engine;

import dev.warden.config.WardenConfig;
import dev.warden.lock.CheckedDir;
import dev.warden.lock.FileLocker;
import dev.warden.lock.HeldLock;
import dev.warden.lock.LockException;
import dev.warden.lock.ProcLocks;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * {@code warden engine stop|unload} and their HTTP twins: act now, under the build lock, waiting
 * for a build in flight to finish first (up to {@code warden.engine.build-lock-wait}).
 */
@Singleton
public class EngineActions {

    /** filelock's own poll interval while a manual action waits for the build lock. */
    private static final Duration BUILD_LOCK_POLL = Duration.ofMillis(50);

    private final FileLocker locker;
    private final ProcLocks procLocks;
    private final EngineRecords records;
    private final EngineStopper stopper;
    private final EngineIdentity identity;
    private final EngineClient client;
    private final Duration buildLockWait;
    private final Optional<URI> externalEngine;

    @Inject
    public EngineActions(FileLocker locker, ProcLocks procLocks, EngineRecords records, EngineStopper stopper,
            EngineIdentity identity, EngineClient client, WardenConfig config) {
        this(locker, procLocks, records, stopper, identity, client, config.engine().buildLockWait(), config.engine().url());
    }

    public EngineActions(FileLocker locker, ProcLocks procLocks, EngineRecords records, EngineStopper stopper,
            EngineIdentity identity, EngineClient client, Duration buildLockWait, Optional<URI> externalEngine) {
        this.identity = identity;
        this.locker = locker;
        this.procLocks = procLocks;
        this.records = records;
        this.stopper = stopper;
        this.client = client;
        this.buildLockWait = buildLockWait;
        this.externalEngine = externalEngine;
    }

    /** Thrown when the build lock stays held past the wait. */
    public static final class BuildLockBusy extends Exception {
        public BuildLockBusy(String message) {
            super(message);
        }
    }

    /**
     * Stops the engines recorded in every dir of {@code dirs} (a dir lilbee has not created is
     * skipped), each under its own build lock. A dir whose build lock stays held does not keep the
     * others from being stopped; it is reported once the rest are done.
     */
    public List<String> stop(EngineDirs dirs) throws BuildLockBusy, LockException {
        List<String> done = new ArrayList<>();
        List<String> busy = new ArrayList<>();
        for (EngineDir dir : present(dirs)) {
            try (HeldLock build = buildLock(dir)) {
                List<EngineRecord> recorded = records.read(dir);
                done.addAll(recorded.isEmpty() ? List.of("no engine is recorded in " + dir.root()) : stopper.stopAll(dir, recorded));
            } catch (BuildLockBusy e) {
                busy.add(e.getMessage());
            }
        }
        if (!busy.isEmpty()) {
            throw new BuildLockBusy(String.join(" ", busy) + (done.isEmpty() ? "" : " Done meanwhile: " + String.join("; ", done)));
        }
        return done;
    }

    /**
     * Unloads the weights of every engine recorded in {@code dirs} (and {@code warden.engine.url},
     * once); the proxies stay up.
     */
    public List<EngineClient.UnloadResult> unload(EngineDirs dirs) throws BuildLockBusy, LockException {
        List<EngineClient.UnloadResult> results = new ArrayList<>();
        for (EngineDir dir : present(dirs)) {
            try (HeldLock build = buildLock(dir)) {
                for (EngineRecord record : records.read(dir)) {
                    Optional<EngineClient.Endpoint> endpoint = identity.endpoint(record);
                    if (endpoint.isEmpty()) {
                        results.add(new EngineClient.UnloadResult(false, record.file() + " records no proxy_port"));
                    } else {
                        EngineClient.UnloadResult result = client.unload(endpoint.get());
                        results.add(new EngineClient.UnloadResult(result.unloaded(), record.file() + ": " + result.detail()));
                    }
                }
            }
        }
        externalEngine.ifPresent(url -> {
            EngineClient.UnloadResult result = client.unload(EngineClient.Endpoint.configured(url));
            results.add(new EngineClient.UnloadResult(result.unloaded(), url + ": " + result.detail()));
        });
        return results;
    }

    private static List<EngineDir> present(EngineDirs dirs) {
        return dirs.inUse().stream().map(EngineDirs.Entry::dir).toList();
    }

    private HeldLock buildLock(EngineDir dir) throws BuildLockBusy, LockException {
        try {
            CheckedDir.createDirectories(dir.root());
        } catch (java.io.IOException e) {
            throw new LockException("Cannot create the engine dir " + dir.root() + " (" + e + ")", e);
        }
        Optional<HeldLock> lock = locker.tryLock(dir.buildLock(), buildLockWait, BUILD_LOCK_POLL);
        if (lock.isEmpty()) {
            throw new BuildLockBusy("The engine build lock " + dir.buildLock() + " stayed held by "
                    + procLocks.describeHolder(dir.buildLock()) + " for "
                    + buildLockWait.toSeconds() + " s: a build or stop is still running. Try again when it ends.");
        }
        return lock.get();
    }
}
