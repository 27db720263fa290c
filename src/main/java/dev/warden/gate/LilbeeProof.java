package dev.warden.gate;

import dev.warden.engine.ProcessTable;
import dev.warden.lock.FileId;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * Which files a process holds an exclusive flock on through a descriptor of its own: the proof that this pod's lilbee
 * (the process its supervisor names) holds {@code server.lock}. The kernel says it per descriptor, in
 * {@code /proc/<pid>/fdinfo/<fd>}, whose {@code lock:} lines list the locks taken through that open file; only an
 * {@code FLOCK ... WRITE} line counts (lilbee's filelock), never a POSIX, OFD, lease or shared lock.
 *
 * <p>Only the supervisor's lilbee is looked at, never the pod's other processes: a neighbour that names a process
 * {@code lilbee serve}, or takes a lock on a file it named {@code server.lock}, proves nothing. The descriptor each
 * file was found on is checked again at every look (two small reads); the process's other descriptors are looked
 * through at most every {@link #SCAN_INTERVAL}, at most {@link #STATS_PER_SCAN} of them.
 *
 * <p>Seeing another process's descriptors needs what ptrace's read mode needs: the same UID (and the process
 * dumpable) or CAP_SYS_PTRACE. A lilbee warden cannot look into holds nothing it can prove.
 */
public final class LilbeeProof {

    /** How often a lilbee's descriptors are looked through at most, while it holds none of the files asked about. */
    private static final Duration SCAN_INTERVAL = Duration.ofMillis(250);
    /** lilbee has a few hundred descriptors; more are a neighbour's doing or a leak, and are not looked through. */
    private static final int STATS_PER_SCAN = 4096;
    /** fdinfo is a few lines; lock lines beyond this are POSIX ranges, and flock's come first. */
    private static final int FDINFO_BYTES = 8192;

    private final ProcessTable processes;
    private final Path proc;
    /** The instance looked at, and the descriptor each file was found on. */
    private long pid = -1;
    private long startTicks = -1;
    private final Map<FileId, Integer> found = new HashMap<>();
    private long scannedAt = System.nanoTime() - SCAN_INTERVAL.toNanos();

    public LilbeeProof(ProcessTable processes) {
        this(processes, Path.of("/proc"));
    }

    LilbeeProof(ProcessTable processes, Path proc) {
        this.processes = processes;
        this.proc = proc;
    }

    /**
     * Whether process {@code pid} is the instance that started at {@code startTicks}: a pid reused since is not the
     * lilbee the supervisor named.
     */
    public boolean alive(long pid, long startTicks) {
        return processes.startTicks(pid).orElse(-1) == startTicks;
    }

    /** Which of {@code wanted} that instance holds an exclusive flock on. Not thread-safe: one keeper looks. */
    public Set<FileId> holds(long pid, long startTicks, Set<FileId> wanted) {
        if (pid != this.pid || startTicks != this.startTicks) {
            this.pid = pid;
            this.startTicks = startTicks;
            found.clear();
            scannedAt = System.nanoTime() - SCAN_INTERVAL.toNanos();
        }
        Set<FileId> holds = new HashSet<>();
        found.entrySet().removeIf(entry -> !wanted.contains(entry.getKey()) || !heldThrough(entry.getValue(), entry.getKey()));
        holds.addAll(found.keySet());
        if (holds.size() < wanted.size() && System.nanoTime() - scannedAt >= SCAN_INTERVAL.toNanos()) {
            scannedAt = System.nanoTime();
            scan(wanted, holds);
        }
        // A pid reused while its descriptors were read would lend a stranger the old process's proof.
        return alive(pid, startTicks) ? Set.copyOf(holds) : Set.of();
    }

    private void scan(Set<FileId> wanted, Set<FileId> holds) {
        int stats = 0;
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(proc.resolve(Long.toString(pid)).resolve("fd"))) {
            for (Path entry : entries) {
                if (++stats > STATS_PER_SCAN) {
                    return;
                }
                int fd;
                try {
                    fd = Integer.parseInt(entry.getFileName().toString());
                } catch (NumberFormatException e) {
                    continue;
                }
                FileId file = fileOf(fd);
                if (file != null && wanted.contains(file) && !holds.contains(file) && heldThrough(fd, file)) {
                    found.put(file, fd);
                    holds.add(file);
                }
            }
        } catch (IOException | RuntimeException e) {
            // gone, or not ours to look into (another UID, not dumpable): nothing proven
        }
    }

    /** The file behind descriptor {@code fd}, through the magic link: the open file itself, deleted or not. */
    private FileId fileOf(int fd) {
        try {
            Map<String, Object> id = Files.readAttributes(proc.resolve(Long.toString(pid)).resolve("fd")
                    .resolve(Integer.toString(fd)), "unix:dev,ino");
            return new FileId((Long) id.get("dev"), (Long) id.get("ino"));
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    private boolean heldThrough(int fd, FileId file) {
        return file.equals(fileOf(fd)) && exclusiveFlock(proc.resolve(Long.toString(pid)).resolve("fdinfo")
                .resolve(Integer.toString(fd)), file);
    }

    /** Whether fdinfo lists an exclusive flock on {@code file} taken through this descriptor. */
    static boolean exclusiveFlock(Path fdinfo, FileId file) {
        byte[] head;
        try (InputStream in = Files.newInputStream(fdinfo)) {
            head = in.readNBytes(FDINFO_BYTES);
        } catch (IOException e) {
            return false;
        }
        for (String line : new String(head, StandardCharsets.US_ASCII).split("\n")) {
            if (line.startsWith("lock:") && isExclusiveFlock(line.substring("lock:".length()), file)) {
                return true;
            }
        }
        return false;
    }

    /** {@code "1: FLOCK  ADVISORY  WRITE 4242 00:2d:1234 0 EOF"}; a waiter has {@code "->"} after the number. */
    static boolean isExclusiveFlock(String line, FileId file) {
        String[] fields = line.trim().split("\\s+");
        if (fields.length < 6 || !fields[1].equals("FLOCK") || !fields[3].equals("WRITE")) {
            return false;
        }
        String[] id = fields[5].split(":");
        try {
            return id.length == 3 && Long.parseLong(id[0], 16) == file.major() && Long.parseLong(id[1], 16) == file.minor()
                    && Long.parseLong(id[2]) == file.inode();
        } catch (NumberFormatException e) {
            return false;
        }
    }
}
