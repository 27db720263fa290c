package dev.warden.gate;

import dev.warden.engine.ProcessInfo;
import dev.warden.engine.ProcessTable;
import dev.warden.lock.FileId;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;

/**
 * The processes of this pod that hold an exclusive flock on {@code server.lock} through a descriptor
 * of their own: the proof that a process is this pod's lilbee. The kernel says it per descriptor, in
 * {@code /proc/<pid>/fdinfo/<fd>}, whose {@code lock:} lines list the locks taken through that open
 * file; only an {@code FLOCK ... WRITE} line counts (lilbee's filelock), never a POSIX, OFD, lease or
 * shared lock, which anyone who can read the file may take without keeping lilbee out.
 *
 * <p>A neighbour decides how many processes and descriptors the pod has, so the work is bounded per
 * look: the holders already proven are checked again each time (three small reads each), and the rest
 * of {@code /proc} is walked in steps of at most {@link #STATS_PER_LOOK} descriptors, a pass spread
 * over as many looks as it takes, started at most every {@link #PASS_INTERVAL}. Nothing here reads the
 * node's whole lock table, whose length any process on the node decides.
 *
 * <p>Seeing another process's descriptors needs what ptrace's read mode needs: the same UID (and the
 * process dumpable) or CAP_SYS_PTRACE. A holder warden cannot look into is not this pod's lilbee.
 */
public final class ServerLockHolders {

    /**
     * How often a pass over the pod's processes starts at most: a process that takes the lock is proven
     * within this (the probes ask every few seconds), and the proven are checked at every look.
     */
    private static final Duration PASS_INTERVAL = Duration.ofMillis(250);
    /** The descriptors stat'ed in one look at most, and in one process at most (lilbee has a few hundred). */
    private static final int STATS_PER_LOOK = 4096;
    private static final int STATS_PER_PROCESS = 4096;
    /** The processes one pass lists at most: the kernel's default pid_max. */
    private static final int PIDS_PER_PASS = 32_768;
    /** fdinfo is a few lines; lock lines beyond this are a neighbour's POSIX ranges, and flock's come first. */
    private static final int FDINFO_BYTES = 8192;
    /** Holders remembered at most; more is a neighbour's doing, and the first proven are kept. */
    private static final int MAX_HOLDERS = 64;
    private static final String DELETED = " (deleted)";

    /**
     * One proven holder.
     *
     * @param fd the holder's descriptor on the file, checked again at each look
     * @param file the file it holds, which may no longer be at the path
     */
    public record Holder(ProcessInfo process, int fd, FileId file) {

        public long pid() {
            return process.pid();
        }
    }

    /**
     * What one look found.
     *
     * @param complete whether a whole pass over the pod's processes has ended since the first look: until
     *     then a holder may not have been looked at yet
     */
    public record Look(List<Holder> holders, boolean complete) {
    }

    private final ProcessTable processes;
    private final Path proc;
    private final long self = ProcessHandle.current().pid();
    private final List<Holder> known = new ArrayList<>();
    private final Deque<Long> pending = new ArrayDeque<>();
    private boolean passEnded;
    private long passStarted = System.nanoTime() - PASS_INTERVAL.toNanos();

    public ServerLockHolders(ProcessTable processes) {
        this(processes, Path.of("/proc"));
    }

    /** Looking in {@code proc}: the machine's {@code /proc}, or a view of it that holds one pod's processes. */
    public ServerLockHolders(ProcessTable processes, Path proc) {
        this.processes = processes;
        this.proc = proc;
    }

    /**
     * The holders of an exclusive flock on any of {@code files}, or on a deleted file named
     * {@code lockName} on {@code device} (what a warden restarted after a reset knows of the file its
     * pod's lilbee still holds). Not thread-safe: one keeper looks.
     */
    public Look look(Set<FileId> files, String lockName, long device) {
        List<Holder> holders = new ArrayList<>();
        for (Holder holder : known) {
            stillHolds(holder, files, lockName, device).ifPresent(holders::add);
        }
        if (pending.isEmpty() && System.nanoTime() - passStarted >= PASS_INTERVAL.toNanos()) {
            passStarted = System.nanoTime();
            listProcesses();
        }
        int budget = STATS_PER_LOOK;
        while (budget > 0 && !pending.isEmpty()) {
            long pid = pending.poll();
            if (pid == self || holders.stream().anyMatch(h -> h.pid() == pid)) {
                continue;
            }
            budget -= scan(pid, files, lockName, device, holders);
        }
        if (pending.isEmpty()) {
            passEnded = true;
        }
        known.clear();
        known.addAll(holders.size() > MAX_HOLDERS ? holders.subList(0, MAX_HOLDERS) : holders);
        return new Look(List.copyOf(known), passEnded);
    }

    private void listProcesses() {
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(proc, "[0-9]*")) {
            for (Path entry : entries) {
                if (pending.size() >= PIDS_PER_PASS) {
                    break;
                }
                try {
                    pending.add(Long.parseLong(entry.getFileName().toString()));
                } catch (NumberFormatException e) {
                    // not a process
                }
            }
        } catch (IOException e) {
            // no /proc: nothing of the pod can be seen, and a pass over nothing has ended
        }
    }

    /** Looks through one process's descriptors; returns how many it stat'ed. */
    private int scan(long pid, Set<FileId> files, String lockName, long device, List<Holder> holders) {
        OptionalLong before = processes.startTicks(pid);
        if (before.isEmpty()) {
            return 1;
        }
        Path fds = proc.resolve(Long.toString(pid)).resolve("fd");
        int stats = 0;
        Map<Integer, FileId> held = new LinkedHashMap<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(fds)) {
            for (Path entry : entries) {
                if (++stats > STATS_PER_PROCESS) {
                    break;
                }
                int fd;
                try {
                    fd = Integer.parseInt(entry.getFileName().toString());
                } catch (NumberFormatException e) {
                    continue;
                }
                heldThrough(pid, fd, files, lockName, device).ifPresent(file -> held.put(fd, file));
            }
        } catch (IOException | RuntimeException e) {
            // gone, or not ours to look into (another UID, not dumpable): not provably this pod's lilbee
            return Math.max(stats, 1);
        }
        if (!held.isEmpty()) {
            // A pid reused while its descriptors were read would lend a stranger the old process's proof.
            processes.info(pid).filter(p -> p.startTicks() == before.getAsLong())
                    .ifPresent(process -> held.forEach((fd, file) -> holders.add(new Holder(process, fd, file))));
        }
        return Math.max(stats, 1);
    }

    private Optional<Holder> stillHolds(Holder holder, Set<FileId> files, String lockName, long device) {
        if (!processes.alive(holder.process())) {
            return Optional.empty();
        }
        return heldThrough(holder.pid(), holder.fd(), files, lockName, device)
                .filter(holder.file()::equals).map(file -> holder);
    }

    /** The file {@code pid} holds an exclusive flock on through {@code fd}, when it is one of the wanted. */
    private Optional<FileId> heldThrough(long pid, int fd, Set<FileId> files, String lockName, long device) {
        Path link = proc.resolve(Long.toString(pid)).resolve("fd").resolve(Integer.toString(fd));
        FileId file;
        try {
            // Through the magic link: the open file itself, deleted or not; a stat never opens or blocks.
            Map<String, Object> id = Files.readAttributes(link, "unix:dev,ino");
            file = new FileId((Long) id.get("dev"), (Long) id.get("ino"));
            if (!files.contains(file)) {
                if (file.device() != device) {
                    return Optional.empty();
                }
                String target = Files.readSymbolicLink(link).toString();
                if (!target.endsWith("/" + lockName + DELETED)) {
                    return Optional.empty();
                }
            }
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
        return exclusiveFlock(proc.resolve(Long.toString(pid)).resolve("fdinfo").resolve(Integer.toString(fd)), file)
                ? Optional.of(file) : Optional.empty();
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
