package dev.warden.footprint;

import dev.warden.config.WardenConfig;
import dev.warden.engine.ProcessTable;
import dev.warden.lock.Posix;
import jakarta.inject.Singleton;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.jboss.logging.Logger;

/**
 * The pages of warden's own files that only one-off work needed: its start, and an engine stopped or unloaded. Starting
 * the native executable reads nearly all of its image heap and much of its code, and the kernel maps the 64 KiB around
 * each page read as well (fault-around): about 42 MiB of the file stay mapped and count in warden's resident memory,
 * where running needs about 27. The JVM image maps its AOT cache (about 50 MB) the same way. A stop or an unload maps
 * what only it runs (the identity checks, the signals, the HTTP client) and keeps it mapped: about 3 MiB. Once that work
 * is a while behind, warden gives back the pages of the files it owns with {@code MADV_PAGEOUT}: a page no other
 * process maps is reclaimed and read back from the file when touched again. The kernel reclaims a file's pages only for
 * a process that owns the file (or could write it), which is why the images give warden's UID its executable and its
 * AOT cache, read-only, and why warden asks only for those: the JVM's and libc's pages belong to root. Nothing is lost:
 * a page warden wrote stays (or goes to swap, where a node has one, as it would under memory pressure). The same
 * mappings are first marked {@code MADV_RANDOM}: after the page out, a page of data touched again is read alone, where
 * it would otherwise bring 128 KiB of the file into the kernel's cache and map the 64 KiB around it (the kernel still
 * reads code that way, whatever the advice).
 */
@Singleton
public class OneOffPages {

    private static final Logger LOG = Logger.getLogger(OneOffPages.class);
    /** /proc/self/maps of a process with a few hundred mappings is tens of KiB; more is not read. */
    private static final int MAX_MAPS_BYTES = 1 << 20;

    private final Posix posix;
    private final ProcessTable processes;
    private final WardenConfig config;
    /** When the pending release is due (System.nanoTime), and the latest one-off work it follows. */
    private long dueNanos;
    private String work;
    private boolean pending;

    public OneOffPages(Posix posix, ProcessTable processes, WardenConfig config) {
        this.posix = posix;
        this.processes = processes;
        this.config = config;
    }

    /**
     * Gives the pages back {@code warden.memory.release-start-pages-after} from now, unless more one-off work comes
     * first: then that long after it, once. {@code after} says in the log what the work was.
     */
    public synchronized void releaseLater(String after) {
        Duration delay = config.memory().releaseStartPagesAfter();
        if (!delay.isPositive()) {
            return;
        }
        dueNanos = System.nanoTime() + delay.toNanos();
        work = after;
        if (!pending) {
            pending = true;
            Thread.ofPlatform().daemon().name("warden-one-off-pages").start(this::releaseWhenDue);
        }
    }

    private void releaseWhenDue() {
        String after;
        synchronized (this) {
            try {
                for (long left = dueNanos - System.nanoTime(); left > 0; left = dueNanos - System.nanoTime()) {
                    TimeUnit.NANOSECONDS.timedWait(this, left);
                }
            } catch (InterruptedException e) {
                return;
            } finally {
                pending = false;
            }
            after = work;
        }
        release(after);
    }

    /** Pages out every mapping of a file this process's user owns; says in the log how much was resident before and after. */
    void release(String after) {
        List<Range> mappings;
        try {
            // The real UID: warden is never set-UID, so it is the one the kernel asks the owner check of.
            int uid = processes.uid(ProcessHandle.current().pid()).orElseThrow(() -> new IOException("no UID in /proc/self/status"));
            mappings = mappingsOf(readCapped(Path.of("/proc/self/maps")), ownedBy(uid));
        } catch (IOException | RuntimeException e) {
            LOG.infof("Cannot find the pages of warden's own files to give back after %s (%s): warden keeps them", after,
                    e.getMessage());
            return;
        }
        OptionalLong before = residentKib();
        Optional<String> refused = pageOut(mappings);
        if (refused.isPresent()) {
            // EINVAL before Linux 5.4, which has no MADV_PAGEOUT: the pages stay, as they would have.
            LOG.infof("Cannot give back the pages of warden's own files only %s needed (%s): warden keeps them", after,
                    refused.get());
            return;
        }
        OptionalLong now = residentKib();
        LOG.infof("Gave back the pages of warden's own files only %s needed (%d mappings): resident %s MiB, now %s MiB;"
                + " the kernel maps back what warden touches again", after, mappings.size(), mib(before), mib(now));
        // Saying so mapped back code that nothing runs again (the log's formatting and writing, this thread's own steps),
        // 64 KiB at a time: about 1.2 MiB, given back once more with nothing run after it.
        pageOut(mappings);
    }

    /** Advises the kernel to read {@code mappings} page by page and pages them out; why not, if the kernel refused. */
    private Optional<String> pageOut(List<Range> mappings) {
        for (Range mapping : mappings) {
            try {
                posix.advise(mapping.start(), mapping.length(), Posix.Advice.RANDOM);
                posix.advise(mapping.start(), mapping.length(), Posix.Advice.PAGEOUT);
            } catch (Posix.ErrnoException e) {
                return Optional.of(e.getMessage());
            }
        }
        return Optional.empty();
    }

    /** Whether a mapped path is a file (not followed if a link) that {@code uid} owns; unreadable paths are not. */
    private static Predicate<String> ownedBy(long uid) {
        Map<String, Boolean> owned = new HashMap<>();
        return path -> owned.computeIfAbsent(path, p -> {
            try {
                return p.startsWith("/") && ((Number) Files.getAttribute(Path.of(p), "unix:uid", LinkOption.NOFOLLOW_LINKS))
                        .longValue() == uid;
            } catch (IOException | RuntimeException e) {
                // a deleted file's " (deleted)", a memfd, a path gone since: not asked for
                return false;
            }
        });
    }

    /** A mapping's address range. */
    record Range(long start, long length) {
    }

    /** The mappings in a {@code /proc/<pid>/maps} text ({@code start-end perms offset dev inode path}) whose path is wanted. */
    static List<Range> mappingsOf(String maps, Predicate<String> wanted) {
        List<Range> ranges = new ArrayList<>();
        for (String line : maps.split("\n")) {
            String[] fields = line.strip().split("\\s+", 6);
            if (fields.length < 6 || !wanted.test(fields[5])) {
                continue;
            }
            int dash = fields[0].indexOf('-');
            if (dash <= 0) {
                continue;
            }
            try {
                long start = Long.parseUnsignedLong(fields[0], 0, dash, 16);
                long end = Long.parseUnsignedLong(fields[0], dash + 1, fields[0].length(), 16);
                if (Long.compareUnsigned(end, start) > 0) {
                    ranges.add(new Range(start, end - start));
                }
            } catch (NumberFormatException e) {
                // not a mapping line
            }
        }
        return ranges;
    }

    private static String readCapped(Path file) throws IOException {
        try (InputStream in = Files.newInputStream(file)) {
            return new String(in.readNBytes(MAX_MAPS_BYTES), StandardCharsets.US_ASCII);
        }
    }

    /** VmRSS of this process, from /proc/self/status. */
    private static OptionalLong residentKib() {
        try {
            for (String line : readCapped(Path.of("/proc/self/status")).split("\n")) {
                if (line.startsWith("VmRSS:")) {
                    return OptionalLong.of(Long.parseLong(line.substring(6).replace("kB", "").strip()));
                }
            }
        } catch (IOException | NumberFormatException e) {
            // said as unknown
        }
        return OptionalLong.empty();
    }

    private static String mib(OptionalLong kib) {
        return kib.isPresent() ? String.format(Locale.ROOT, "%.1f", kib.getAsLong() / 1024.0) : "?";
    }
}
