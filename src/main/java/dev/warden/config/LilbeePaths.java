package dev.warden.config;

import dev.warden.lock.CheckedDir;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The directories whose locks warden holds, canonicalised as lilbee canonicalises them (links
 * resolved, {@code ~} expanded) so that two spellings of one directory are one lock.
 *
 * @param rootOrigin which step of lilbee's resolution gave the data root (for the log)
 */
public record LilbeePaths(Path dataRoot, Path dataDir, Path lancedbDir, Optional<Path> scopeDir, String rootOrigin) {

    public static final String SERVER_LOCK = "server.lock";
    public static final String SCOPE_LOCK = "server.scope.lock";
    public static final String SCOPE_OWNER = "server.scope.owner.json";
    /** warden's own lock in gate mode: whoever holds it may run the data dir's {@code lilbee serve}. */
    public static final String GATE_LOCK = "warden-gate.lock";

    /** What the command line may say over the configuration. */
    public record Overrides(Optional<Path> dataRoot, Optional<Path> scope, boolean global) {
        public static final Overrides NONE = new Overrides(Optional.empty(), Optional.empty(), false);
    }

    /**
     * The paths from the command line, else the configuration's explicit {@code warden.*}
     * properties, else exactly where {@code lilbee serve} would put them in {@code env}. The data
     * dir and LanceDB dir follow the data root unless configured on their own.
     */
    public static LilbeePaths of(WardenConfig config, LilbeeEnvironment env, Overrides overrides) {
        Realpath real = env.realpath();
        LilbeeEnvironment.Resolved root = overrides.dataRoot().map(p -> new LilbeeEnvironment.Resolved(real.of(p), "--data-root"))
                .or(() -> overrides.global() ? Optional.empty()
                        : config.dataRoot().map(p -> new LilbeeEnvironment.Resolved(real.of(p), "warden.data-root")))
                .orElseGet(() -> env.dataRoot(overrides.global()));
        Path dataDir = config.dataDir().map(real::of).orElse(root.path().resolve("data"));
        Path lancedb = config.lancedbDir().map(real::of).orElse(root.path().resolve("data").resolve("lancedb"));
        Optional<Path> scope = overrides.scope().or(config::scopeDir).map(real::of).or(env::scopeDir);
        return new LilbeePaths(root.path(), dataDir, lancedb, scope, root.origin());
    }

    public Path serverLock() {
        return dataDir.resolve(SERVER_LOCK);
    }

    /** {@code <data dir>/warden-gate.lock}: the election in gate mode. */
    public Path gateLock() {
        return dataDir.resolve(GATE_LOCK);
    }

    public Optional<Path> scopeLock() {
        return scopeDir.map(d -> d.resolve(SCOPE_LOCK));
    }

    public Optional<Path> scopeOwner() {
        return scopeDir.map(d -> d.resolve(SCOPE_OWNER));
    }

    /** The same paths with every existing directory's links resolved again; missing ones stay as they are. */
    public LilbeePaths canonical() {
        return new LilbeePaths(realOrSelf(dataRoot), realOrSelf(dataDir), realOrSelf(lancedbDir),
                scopeDir.map(LilbeePaths::realOrSelf), rootOrigin);
    }

    /** Creates the data dir and scope dir (as lilbee does before locking), then canonicalises. */
    public LilbeePaths created() {
        try {
            create(dataDir);
            if (scopeDir.isPresent()) {
                create(scopeDir.get());
            }
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot create " + e.getMessage()
                    + ": warden needs to create it to hold its lock there. Check the volume and its permissions.", e);
        }
        return canonical();
    }

    /**
     * The directories of {@code dir} that do not exist yet, each made in its checked parent below the
     * deepest one that does, with that one's links resolved as lilbee's {@code makedirs} follows them: a
     * directory swapped for a link after that (by a neighbour on the volume) fails the creation instead of
     * sending it, and the lock after it, elsewhere.
     */
    private static void create(Path dir) throws IOException {
        Path wanted = dir.toAbsolutePath();
        Path existing = wanted;
        while (!Files.isDirectory(existing)) {
            existing = existing.getParent();
        }
        CheckedDir.createDirectories(existing.toRealPath().resolve(existing.relativize(wanted)));
    }

    private static Path realOrSelf(Path path) {
        try {
            return path.toRealPath();
        } catch (IOException e) {
            return path;
        }
    }
}
