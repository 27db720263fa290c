package dev.warden.lock;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.LinkOption;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * Who holds a lock, as the kernel's lock table ({@code /proc/locks}) tells it. Best effort: a
 * holder in another PID namespace shows as pid 0 or not at all, and the table may be unreadable.
 */
public final class ProcLocks {

    private final Path table;

    public ProcLocks() {
        this(Path.of("/proc/locks"));
    }

    public ProcLocks(Path table) {
        this.table = table;
    }

    /** The pid holding a lock on the file now at {@code lockFile}, when the lock table shows one. */
    public OptionalLong holderOf(Path lockFile) {
        return idOf(lockFile).map(this::holderOf).orElse(OptionalLong.empty());
    }

    /** The device and inode of the file now at {@code path}, a link not followed; empty when there is none. */
    public static Optional<FileId> idOf(Path path) {
        try {
            Map<String, Object> attributes = Files.readAttributes(path, "unix:dev,ino", LinkOption.NOFOLLOW_LINKS);
            return Optional.of(new FileId((Long) attributes.get("dev"), (Long) attributes.get("ino")));
        } catch (IOException | UnsupportedOperationException e) {
            return Optional.empty();
        }
    }

    /** "pid 42", or "another process" where the lock table does not say: for messages. */
    public String describeHolder(Path lockFile) {
        OptionalLong pid = holderOf(lockFile);
        return pid.isPresent() ? "pid " + pid.getAsLong() : "another process";
    }

    /** The pid holding an exclusive lock on the file, when the lock table shows one. */
    public OptionalLong holderOf(FileId file) {
        List<String> lines;
        try {
            lines = Files.readAllLines(table);
        } catch (IOException e) {
            return OptionalLong.empty();
        }
        String wanted = Long.toHexString(file.major()) + ":" + Long.toHexString(file.minor()) + ":" + file.inode();
        for (String line : lines) {
            // "1: FLOCK  ADVISORY  WRITE 4242 00:2d:1234 0 EOF"; waiters have "->" after the id.
            String[] fields = line.trim().split("\\s+");
            if (fields.length < 6 || "->".equals(fields[1])) {
                continue;
            }
            if (sameFile(fields[5], wanted)) {
                try {
                    long pid = Long.parseLong(fields[4]);
                    if (pid > 0) {
                        return OptionalLong.of(pid);
                    }
                } catch (NumberFormatException e) {
                    // a line this parser does not know; keep looking
                }
            }
        }
        return OptionalLong.empty();
    }

    private static boolean sameFile(String field, String wanted) {
        String[] got = field.split(":");
        String[] want = wanted.split(":");
        if (got.length != 3) {
            return false;
        }
        try {
            return Long.parseLong(got[0], 16) == Long.parseLong(want[0], 16)
                    && Long.parseLong(got[1], 16) == Long.parseLong(want[1], 16)
                    && got[2].equals(want[2]);
        } catch (NumberFormatException e) {
            return false;
        }
    }
}
