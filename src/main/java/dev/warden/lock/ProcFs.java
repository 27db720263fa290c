package dev.warden.lock;

import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * What the kernel tells of processes and their open files ({@code /proc}): which instance a pid is, its parent, its
 * descriptors, the file behind each and the locks taken through it. The gate proves its lilbee and checks its own gate
 * lock through it; the simulation gives the very classes that do a kernel of its own ({@link SystemProcFs} is the
 * machine's).
 *
 * <p>Looking into another process's descriptors needs what ptrace's read mode needs: the same UID and the process
 * dumpable, or CAP_SYS_PTRACE. What cannot be looked at is reported as nothing, never as an error.
 */
public interface ProcFs {

    /** This process's pid, as this PID namespace numbers it. */
    long self();

    /** When {@code pid} started, in clock ticks since boot: it names that instance. Empty when gone or a zombie. */
    OptionalLong startTicks(long pid);

    /** The pid of {@code pid}'s parent; empty when gone, 0 when the parent is outside this PID namespace. */
    OptionalLong parent(long pid);

    /** At most {@code max} of {@code pid}'s descriptor numbers; none when it cannot be looked at. */
    int[] descriptors(long pid, int max);

    /** The file (device and inode) descriptor {@code fd} of {@code pid} refers to, deleted or not. */
    Optional<FileId> fileOf(long pid, int fd);

    /**
     * Whether the kernel says {@code pid} has no descriptor {@code fd} (closed): false when it has one, and when it
     * cannot be looked at, so that a look that failed never counts as a descriptor closed.
     */
    boolean closed(long pid, int fd);

    /**
     * At most {@code max} bytes of {@code /proc/<pid>/fdinfo/<fd>}, whose {@code lock:} lines are the locks taken
     * through that open file; empty when it cannot be read.
     */
    byte[] fdinfo(long pid, int fd, int max);

    /** fdinfo is a few lines; lock lines beyond this are POSIX ranges, and flock's come first. */
    int FDINFO_BYTES = 8192;

    /**
     * Whether an exclusive flock on {@code file} was taken through descriptor {@code fd} of {@code pid} (an
     * {@code FLOCK ... WRITE} line in its fdinfo): never a POSIX, OFD, lease or shared lock, nor one only waited for.
     */
    default boolean exclusiveFlock(long pid, int fd, FileId file) {
        String info = new String(fdinfo(pid, fd, FDINFO_BYTES), StandardCharsets.US_ASCII);
        for (int at = info.indexOf("lock:"); at >= 0; at = info.indexOf("lock:", at + 1)) {
            if ((at == 0 || info.charAt(at - 1) == '\n') && isExclusiveFlock(info.substring(at + "lock:".length(),
                    endOfLine(info, at)), file)) {
                return true;
            }
        }
        return false;
    }

    private static int endOfLine(String text, int from) {
        int end = text.indexOf('\n', from);
        return end < 0 ? text.length() : end;
    }

    /**
     * {@code "1: FLOCK  ADVISORY  WRITE 4242 00:2d:1234 0 EOF"}; a waiter has {@code "->"} after the number. Read field by
     * field, every round of the gate, without a regular expression.
     */
    static boolean isExclusiveFlock(String line, FileId file) {
        int at = 0;
        for (int field = 0; field < 6; field++) {
            while (at < line.length() && Character.isWhitespace(line.charAt(at))) {
                at++;
            }
            int start = at;
            while (at < line.length() && !Character.isWhitespace(line.charAt(at))) {
                at++;
            }
            if (start == at) {
                return false;
            }
            String word = line.substring(start, at);
            boolean fits = switch (field) {
                case 1 -> word.equals("FLOCK");
                case 3 -> word.equals("WRITE");
                case 5 -> sameFile(word, file);
                default -> true;
            };
            if (!fits) {
                return false;
            }
        }
        return true;
    }

    /** {@code "00:2d:1234"}: major and minor in hex, the inode in decimal. */
    private static boolean sameFile(String id, FileId file) {
        int first = id.indexOf(':');
        int second = id.indexOf(':', first + 1);
        if (first < 0 || second < 0 || id.indexOf(':', second + 1) >= 0) {
            return false;
        }
        try {
            return Long.parseLong(id, 0, first, 16) == file.major() && Long.parseLong(id, first + 1, second, 16) == file.minor()
                    && Long.parseLong(id, second + 1, id.length(), 10) == file.inode();
        } catch (NumberFormatException e) {
            return false;
        }
    }

    /** Whether {@code pid} descends from {@code ancestor}, walking parents at most {@code depth} levels. */
    default boolean descendsFrom(long pid, long ancestor, int depth) {
        long at = pid;
        for (int level = 0; level < depth; level++) {
            OptionalLong up = parent(at);
            if (up.isEmpty() || up.getAsLong() <= 0) {
                return false;
            }
            at = up.getAsLong();
            if (at == ancestor) {
                return true;
            }
        }
        return false;
    }
}
