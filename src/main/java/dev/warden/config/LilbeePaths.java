package dev.warden.config;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The directories whose locks warden holds, canonicalised (symbolic links resolved) so that two
 * spellings of one directory are one lock, as lilbee resolves them.
 */
public record LilbeePaths(Path dataRoot, Path dataDir, Optional<Path> scopeDir) {

    public static final String SERVER_LOCK = "server.lock";
    public static final String SCOPE_LOCK = "server.scope.lock";
    public static final String SCOPE_OWNER = "server.scope.owner.json";

    /**
     * The paths from configuration, with the command line's overrides. A data root named on the
     * command line moves the data dir with it, unless the data dir is configured on its own.
     */
    public static LilbeePaths of(WardenConfig config, Optional<Path> dataRootOverride, Optional<Path> scopeOverride) {
        Path root = dataRootOverride.orElse(config.dataRoot());
        Path dataDir = config.dataDir().orElse(root.resolve("data"));
        Optional<Path> scope = scopeOverride.isPresent() ? scopeOverride : config.scopeDir();
        return new LilbeePaths(root.toAbsolutePath().normalize(), dataDir.toAbsolutePath().normalize(),
                scope.map(p -> p.toAbsolutePath().normalize()));
    }

    /** lilbee's LanceDB dir: {@code warden.lancedb-dir}, else {@code <data root>/data/lancedb}. */
    public static Path lancedbDir(WardenConfig config, Path dataRoot) {
        return config.lancedbDir().orElse(dataRoot.resolve("data").resolve("lancedb")).toAbsolutePath().normalize();
    }

    public Path serverLock() {
        return dataDir.resolve(SERVER_LOCK);
    }

    public Optional<Path> scopeLock() {
        return scopeDir.map(d -> d.resolve(SCOPE_LOCK));
    }

    public Optional<Path> scopeOwner() {
        return scopeDir.map(d -> d.resolve(SCOPE_OWNER));
    }

    /** The same paths with every existing directory's links resolved; missing ones stay as they are. */
    public LilbeePaths canonical() {
        return new LilbeePaths(realOrSelf(dataRoot), realOrSelf(dataDir), scopeDir.map(LilbeePaths::realOrSelf));
    }

    /** Creates the data dir and scope dir (as lilbee does before locking), then canonicalises. */
    public LilbeePaths created() {
        try {
            Files.createDirectories(dataDir);
            if (scopeDir.isPresent()) {
                Files.createDirectories(scopeDir.get());
            }
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot create " + e.getMessage()
                    + ": warden needs to create it to hold its lock there. Check the volume and its permissions.", e);
        }
        return canonical();
    }

    private static Path realOrSelf(Path path) {
        try {
            return path.toRealPath();
        } catch (IOException e) {
            return path;
        }
    }
}
