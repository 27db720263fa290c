package dev.warden.lock;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.LinkOption;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * Who holds a lock, as the kernel's lock table ({@code /proc/locks}) tells it, for messages. Best effort:
 * a holder in another PID namespace shows as pid 0 or not at all, the table may be unreadable, and any
 * lock type counts. What proves a holder is {@code /proc/<pid>/fdinfo} (gate mode's ServerLockHolders).
 */
public final class ProcLocks {

    /** A node's table can hold hundreds of thousands of locks, most of them anyone's: a message needs few. */
    static final int MAX_LINES = 10_000;

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

    /**
     * The pid holding a lock on the file, when the first {@link #MAX_LINES} lines of the lock table show one:
     * for messages only, never for a decision (any process that can read a file can list a lock on it). The
     * table is read as a stream and left at the first match, so a node with many locks costs little.
     */
    public OptionalLong holderOf(FileId file) {
        String wanted = Long.toHexString(file.major()) + ":" + Long.toHexString(file.minor()) + ":" + file.inode();
        try (BufferedReader lines = Files.newBufferedReader(table, StandardCharsets.US_ASCII)) {
            for (int read = 0; read < MAX_LINES; read++) {
                String line = lines.readLine();
                if (line == null) {
                    break;
                }
                // "1: FLOCK  ADVISORY  WRITE 4242 00:2d:1234 0 EOF"; waiters have "->" after the id.
                String[] fields = line.trim().split("\\s+");
                if (fields.length < 6 || "->".equals(fields[1]) || !sameFile(fields[5], wanted)) {
                    continue;
                }
                try {
                    long pid = Long.parseLong(fields[4]);
                    if (pid > 0) {
                        return OptionalLong.of(pid);
                    }
                } catch (NumberFormatException e) {
                    // a line this parser does not know; keep looking
                }
            }
        } catch (IOException | RuntimeException e) {
            return OptionalLong.empty();
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
