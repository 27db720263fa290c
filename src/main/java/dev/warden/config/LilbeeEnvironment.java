package dev.warden.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.dataformat.toml.TomlMapper;
import dev.warden.lock.CheckedDir;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Where {@code lilbee serve} puts its files in this environment, step by step as lilbee 0.6.90's
 * CLI resolves them (read from its source and checked against the real {@code lilbee serve}; see
 * PROTOCOL.md section 2). warden must land on the very same lock files, whatever the variables.
 *
 * @param env the process environment
 * @param cwd the working directory, where lilbee looks for a {@code .lilbee/} directory
 */
public record LilbeeEnvironment(Map<String, String> env, Path cwd) {

    /** lilbee's local data root, found walking up from the working directory. */
    public static final String LOCAL_ROOT = ".lilbee";
    public static final String CONFIG_FILE = "config.toml";
    /** A config.toml is a few hundred bytes; past this it is not lilbee's. */
    private static final int MAX_CONFIG_BYTES = 256 * 1024;

    /** A resolved path, with the step that gave it (for the log and {@code status}). */
    public record Resolved(Path path, String origin) {
    }

    public static LilbeeEnvironment current() {
        return new LilbeeEnvironment(System.getenv(), Path.of(System.getProperty("user.dir")));
    }

    public Realpath realpath() {
        return new Realpath(cwd, env);
    }

    /**
     * The data root: with {@code global}, lilbee's platform default; else {@code $LILBEE_DATA} as
     * written (the CLI neither strips nor checks it); else {@code $LILBEE_DATA_ROOT} unless blank;
     * else {@code data_root} in the config.toml of the root found next; else a {@code .lilbee/}
     * directory walking up from the working directory; else the platform default. Then
     * {@code realpath(expanduser(...))}.
     */
    public Resolved dataRoot(boolean global) {
        Resolved raw = rawDataRoot(global);
        return new Resolved(realpath().of(raw.path().toString()), raw.origin());
    }

    private Resolved rawDataRoot(boolean global) {
        if (global) {
            return new Resolved(defaultDataRoot(), "--global: lilbee's default data root");
        }
        String data = env.getOrDefault("LILBEE_DATA", "");
        if (!data.isEmpty()) {
            return new Resolved(Path.of(data), "LILBEE_DATA");
        }
        String root = env.getOrDefault("LILBEE_DATA_ROOT", "");
        if (!root.isBlank()) {
            return new Resolved(Path.of(root), "LILBEE_DATA_ROOT");
        }
        Optional<Path> local = localRoot();
        Path configRoot = local.orElseGet(this::defaultDataRoot);
        Optional<String> fromConfig = configDataRoot(configRoot);
        if (fromConfig.isPresent()) {
            return new Resolved(Path.of(fromConfig.get()), "data_root in " + configFile(configRoot));
        }
        return local.map(p -> new Resolved(p, "the " + LOCAL_ROOT + "/ directory above " + cwd))
                .orElseGet(() -> new Resolved(defaultDataRoot(), "lilbee's default data root"));
    }

    /** {@code $XDG_DATA_HOME/lilbee} (set, even empty, counts), else {@code ~/.local/share/lilbee}. */
    private Path defaultDataRoot() {
        return xdg("XDG_DATA_HOME", ".local/share").resolve("lilbee");
    }

    /**
     * lilbee's machine engine slot: {@code $LILBEE_ENGINE_DIR} (stripped, unless blank), else
     * {@code $XDG_STATE_HOME/lilbee/engine}, else {@code ~/.local/state/lilbee/engine}.
     */
    public Path engineSlot() {
        String override = env.getOrDefault("LILBEE_ENGINE_DIR", "").strip();
        return realpath().of(override.isEmpty() ? xdg("XDG_STATE_HOME", ".local/state").resolve("lilbee/engine").toString() : override);
    }

    /** {@code $LILBEE_EXCLUSIVE_SCOPE} as written, unless empty. */
    public Optional<Path> scopeDir() {
        String scope = env.getOrDefault("LILBEE_EXCLUSIVE_SCOPE", "");
        return scope.isEmpty() ? Optional.empty() : Optional.of(realpath().of(scope));
    }

    /**
     * Variables a user may expect {@code lilbee serve} to honour that it ignores (they apply only to
     * {@code import lilbee} as a library), each with what warden guards instead.
     */
    public List<String> ignoredVariables(LilbeePaths paths, boolean dataDirConfigured, boolean lancedbDirConfigured) {
        List<String> notes = new ArrayList<>();
        if (!dataDirConfigured && !env.getOrDefault("LILBEE_DATA_DIR", "").isBlank()) {
            notes.add("LILBEE_DATA_DIR is set, but `lilbee serve` ignores it (it applies only to lilbee used as a"
                    + " library): warden guards " + paths.serverLock() + ", as `lilbee serve` does. Set"
                    + " warden.data-dir to guard another data dir.");
        }
        if (!lancedbDirConfigured && !env.getOrDefault("LILBEE_LANCEDB_DIR", "").isBlank()) {
            notes.add("LILBEE_LANCEDB_DIR is set, but `lilbee serve` ignores it: warden's write lock is "
                    + paths.lancedbDir() + ", as `lilbee serve` uses. Set warden.lancedb-dir to guard another.");
        }
        return notes;
    }

    /** The nearest {@code .lilbee/} directory at or above the working directory (links followed, as lilbee's is_dir). */
    private Optional<Path> localRoot() {
        for (Path dir = cwd; dir != null; dir = dir.getParent()) {
            Path candidate = dir.resolve(LOCAL_ROOT);
            if (Files.isDirectory(candidate)) {
                return Optional.of(candidate);
            }
        }
        return Optional.empty();
    }

    private Path configFile(Path root) {
        return realpath().of(root.toString()).resolve(CONFIG_FILE);
    }

    /**
     * {@code data_root} from config.toml, as lilbee's settings read it below the environment;
     * {@code LILBEE_SKIP_TOML_CONFIG=1} skips the file, as it does for lilbee. A file that cannot be
     * read or parsed gives nothing: lilbee then uses its next step too.
     */
    private Optional<String> configDataRoot(Path root) {
        if ("1".equals(env.get("LILBEE_SKIP_TOML_CONFIG"))) {
            return Optional.empty();
        }
        // lilbee follows links to its config: so does warden, resolving them first; the file is then
        // read from its checked dir, never through a link swapped in since, never blocking on a FIFO.
        Path file = realpath().of(configFile(root).toString());
        try (CheckedDir dir = CheckedDir.open(file.getParent())) {
            byte[] bytes = dir.read(file.getFileName().toString(), MAX_CONFIG_BYTES);
            if (bytes.length > MAX_CONFIG_BYTES) {
                return Optional.empty();
            }
            JsonNode value = new TomlMapper().readTree(bytes).path("data_root");
            return value.isTextual() && !value.asText().isBlank() ? Optional.of(value.asText()) : Optional.empty();
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /** An XDG base directory as lilbee reads it: the variable when set at all (even empty), else under home. */
    private Path xdg(String variable, String underHome) {
        String value = env.get(variable);
        return value != null ? Path.of(value) : Path.of(home()).resolve(underHome);
    }

    private String home() {
        return env.getOrDefault("HOME", System.getProperty("user.home"));
    }
}
