package dev.warden.gate.pod;

import dev.warden.gate.GateWorld.Holding;

import dev.warden.lock.FileId;
import dev.warden.lock.ProcFs;
import dev.warden.time.Moment;
import dev.warden.time.MonotonicClock;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Which files a process holds an exclusive flock on through a descriptor of its own, and which it has open at all: the
 * proof that this pod's lilbee (the process its supervisor names) holds {@code server.lock}, and that one done serving
 * has closed it. The kernel says it per descriptor ({@link ProcFs#exclusiveFlock}); only an {@code FLOCK ... WRITE}
 * counts (lilbee's filelock), never a POSIX, OFD, lease or shared lock.
 *
 * <p>Only the supervisor's lilbee is looked at, never the pod's other processes: a neighbour that names a process
 * {@code lilbee serve}, or takes a lock on a file it named {@code server.lock}, proves nothing. The descriptor each
 * file was found on is checked again at every look (two small reads); the process's other descriptors are looked
 * through at most every {@link #SCAN_INTERVAL}, at most {@link #STATS_PER_SCAN} of them.
 *
 * <p>A lilbee warden cannot look into (another UID, not dumpable) holds nothing it can prove.
 */
public final class LilbeeProof {

    /** How often a lilbee's descriptors are looked through at most, while it holds none of the files asked about. */
    private static final Duration SCAN_INTERVAL = Duration.ofMillis(250);
    /** lilbee has a few hundred descriptors; more are a neighbour's doing or a leak, and are not looked through. */
    private static final int STATS_PER_SCAN = 4096;
    /** A pod's process tree is a handful of levels deep: a longer walk is a loop, or a stranger. */
    private static final int ANCESTRY = 64;

    private final ProcFs procs;
    private final MonotonicClock clock;
    /** The instance looked at, the descriptor each file was found locked on, and one each is open on. */
    private long pid = -1;
    private long startTicks = -1;
    private final Map<FileId, Integer> locked = new HashMap<>();
    private final Map<FileId, Integer> open = new HashMap<>();
    private Moment scannedAt;

    public LilbeeProof(ProcFs procs, MonotonicClock clock) {
        this.procs = procs;
        this.clock = clock;
    }

    /**
     * Whether process {@code pid} is the instance that started at {@code startTicks}: a pid reused since is not the
     * lilbee the supervisor named.
     */
    public boolean alive(long pid, long startTicks) {
        return procs.startTicks(pid).orElse(-1) == startTicks;
    }

    /** Which of {@code wanted} that instance holds an exclusive flock on, and has open. Not thread-safe: one keeper looks. */
    public Holding look(long pid, long startTicks, Set<FileId> wanted) {
        Moment now = clock.now();
        if (pid != this.pid || startTicks != this.startTicks) {
            this.pid = pid;
            this.startTicks = startTicks;
            locked.clear();
            open.clear();
            scannedAt = null;
        }
        locked.entrySet().removeIf(e -> !wanted.contains(e.getKey()) || !lockedThrough(e.getValue(), e.getKey()));
        // An open descriptor is forgotten only when the kernel says it is closed or on another file: a look that failed
        // would let a stepped-down lilbee count as done while it may still hold server.lock.
        open.entrySet().removeIf(e -> !wanted.contains(e.getKey()) || movedOff(e.getValue(), e.getKey()));
        if (locked.size() < wanted.size() && (scannedAt == null || now.since(scannedAt).compareTo(SCAN_INTERVAL) >= 0)) {
            scannedAt = now;
            scan(wanted);
        }
        // A pid reused while its descriptors were read would lend a stranger the old process's proof.
        return alive(pid, startTicks) ? new Holding(Set.copyOf(locked.keySet()), Set.copyOf(open.keySet())) : Holding.NOTHING;
    }

    private void scan(Set<FileId> wanted) {
        for (int fd : procs.descriptors(pid, STATS_PER_SCAN)) {
            Optional<FileId> file = procs.fileOf(pid, fd).filter(wanted::contains);
            if (file.isEmpty()) {
                continue;
            }
            open.putIfAbsent(file.get(), fd);
            if (!locked.containsKey(file.get()) && procs.exclusiveFlock(pid, fd, file.get())) {
                locked.put(file.get(), fd);
                open.put(file.get(), fd);
            }
        }
    }

    private boolean movedOff(int fd, FileId file) {
        return procs.closed(pid, fd) || procs.fileOf(pid, fd).filter(other -> !other.equals(file)).isPresent();
    }

    private boolean onFile(int fd, FileId file) {
        return procs.fileOf(pid, fd).filter(file::equals).isPresent();
    }

    private boolean lockedThrough(int fd, FileId file) {
        return onFile(fd, file) && procs.exclusiveFlock(pid, fd, file);
    }

    /** Whether the lilbee named descends from the supervisor that named it (a process of lilbee's container, not a stranger). */
    public boolean startedBy(long lilbee, long supervisor) {
        return procs.descendsFrom(lilbee, supervisor, ANCESTRY);
    }
}
