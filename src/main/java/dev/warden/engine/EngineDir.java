package dev.warden.engine;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The files of an engine dir, named as lilbee names them (PROTOCOL.md section 4). */
public record EngineDir(Path root) {

    public static final String BUILD_LOCK = "engine.lock";
    public static final String USERS = "engine-users";
    public static final String RECORD_PREFIX = "llama-swap.state";

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

    /** {@code engine-users/*.keep-warm}: presence is the meaning. */
    public List<Path> keepWarmMarkers() {
        return list(usersDir(), "*.keep-warm");
    }

    /** {@code llama-swap.state*.json}, without the {@code .<name>.tmp} files of writes in flight. */
    public List<Path> recordFiles() {
        List<Path> files = list(root, RECORD_PREFIX + "*.json");
        files.removeIf(p -> p.getFileName().toString().endsWith(".tmp"));
        return files;
    }

    private static List<Path> list(Path dir, String glob) {
        List<Path> found = new ArrayList<>();
        if (!Files.isDirectory(dir)) {
            return found;
        }
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir, glob)) {
            for (Path entry : entries) {
                if (Files.isRegularFile(entry, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                    found.add(entry);
                }
            }
        } catch (IOException e) {
            // an engine dir that cannot be listed has nothing warden can act on; the next pass looks again
        }
        found.sort(null);
        return found;
    }
}
