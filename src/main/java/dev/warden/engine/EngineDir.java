package dev.warden.engine;

import dev.warden.lock.CheckedDir;
import dev.warden.lock.FileStat;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** The files of an engine dir, named as lilbee names them (PROTOCOL.md section 4). */
public record EngineDir(Path root) {

    public static final String BUILD_LOCK = "engine.lock";
    public static final String USERS = "engine-users";
    public static final String RECORD_PREFIX = "llama-swap.state";
    private static final int MAX_MARKER_BYTES = 32;
    /** A year: past it a marker's number is not a plausible idle time. */
    private static final long MAX_MARKER_MINUTES = 366L * 24 * 60;

    /** {@code engine.lock}: every build, replace, last-out stop and manual stop runs under it. */
    public Path buildLock() {
        return root.resolve(BUILD_LOCK);
    }

    public Path usersDir() {
        return root.resolve(USERS);
    }

    public Path userLock(String id) {
        return usersDir().resolve(id + ".lock");
    }

    /** The reaper lock: one reaper per engine dir. */
    public Path reaperLock(String name) {
        return root.resolve(name);
    }

    /** {@code engine-users/*.lock}, sorted so passes are repeatable. */
    public List<Path> userLocks() {
        return list(usersDir(), "*.lock");
    }

    /** {@code engine-users/*.keep-warm}: one opt-in per installation, outliving its process. */
    public List<Path> keepWarmMarkers() {
        return list(usersDir(), "*.keep-warm");
    }

    /**
     * How long a kept-warm engine keeps its weights with no user. lilbee writes its idle minutes
     * into its marker: the longest opt-in wins, and 0 means never unload (empty: no limit). A marker
     * that is empty (as PROTOCOL.md's are) or not a number counts as {@code unset}.
     */
    public Optional<Duration> keepWarmIdle(Duration unset) {
        Duration longest = null;
        // One open of engine-users/ for the listing and every marker's read.
        try (CheckedDir users = CheckedDir.open(usersDir())) {
            for (Path marker : regularFiles(users, "*.keep-warm")) {
                Duration idle = markerMinutes(users, marker.getFileName().toString()).map(Duration::ofMinutes).orElse(unset);
                if (idle.isZero()) {
                    return Optional.empty();
                }
                longest = longest == null || idle.compareTo(longest) > 0 ? idle : longest;
            }
        } catch (IOException e) {
            // no engine-users/ warden can list: no marker
        }
        return Optional.of(longest == null ? unset : longest);
    }

    private static Optional<Long> markerMinutes(CheckedDir users, String marker) {
        try {
            // A marker holds a few digits; anything longer is not one of lilbee's.
            byte[] bytes = users.read(marker, MAX_MARKER_BYTES);
            if (bytes.length > MAX_MARKER_BYTES) {
                return Optional.empty();
            }
            long minutes = Long.parseLong(new String(bytes, StandardCharsets.UTF_8).trim());
            return minutes >= 0 && minutes <= MAX_MARKER_MINUTES ? Optional.of(minutes) : Optional.empty();
        } catch (IOException | NumberFormatException e) {
            return Optional.empty();
        }
    }

    /** Whether lilbee has recorded an engine or a user here: a dir without either has nothing to reap. */
    public boolean hasEngineFiles() {
        return Files.isDirectory(usersDir(), java.nio.file.LinkOption.NOFOLLOW_LINKS) || !recordFiles().isEmpty();
    }

    /** {@code llama-swap.state*.json} (the glob leaves out the {@code .<name>.tmp} files of writes in flight). */
    public List<Path> recordFiles() {
        return list(root, RECORD_PREFIX + "*.json");
    }

    /** {@link #recordFiles()}, listed in {@code root} already opened (so a reader of them opens it once). */
    public List<Path> recordFiles(CheckedDir checkedRoot) throws IOException {
        return regularFiles(checkedRoot, RECORD_PREFIX + "*.json");
    }

    /**
     * The regular files in {@code dir} matching {@code glob}.
     * A dir that is a symbolic link, or lies past one (a neighbour's swap of engine-users/ for a link to
     * elsewhere), lists nothing: warden deletes dead users' files and markers from these lists, and must
     * never do so in a directory it was not given.
     */
    private static List<Path> list(Path dir, String glob) {
        try (CheckedDir checked = CheckedDir.open(dir)) {
            return regularFiles(checked, glob);
        } catch (IOException e) {
            // an engine dir that cannot be listed has nothing warden can act on; the next pass looks again
            return new ArrayList<>();
        }
    }

    private static List<Path> regularFiles(CheckedDir dir, String glob) throws IOException {
        List<Path> found = new ArrayList<>();
        for (String name : dir.names(glob)) {
            if (dir.stat(name).filter(FileStat::isRegularFile).isPresent()) {
                found.add(dir.path().resolve(name));
            }
        }
        return found;
    }
}
