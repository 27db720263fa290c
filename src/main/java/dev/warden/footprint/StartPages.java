package dev.warden.footprint;

import dev.warden.config.WardenConfig;
import dev.warden.lock.Posix;
import io.quarkus.runtime.ImageMode;
import jakarta.inject.Singleton;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.OptionalLong;
import org.jboss.logging.Logger;

/**
 * The pages of the native executable that only warden's start needed. Starting reads nearly all of the executable's
 * image heap and much of its code, and the kernel maps the 64 KiB around each page read as well (fault-around): about
 * 42 MiB of the file stay mapped and count in warden's resident memory, where running needs about 27. Once {@code serve}
 * has run a while, warden gives them back with {@code MADV_PAGEOUT}: a page no other process maps is reclaimed and read
 * back from the file when touched again. Nothing is lost: a page warden wrote stays (or goes to swap, where a node has
 * one, as it would under memory pressure). Only the native executable: the JVM's own file is the java launcher, and its
 * code and heap are anonymous memory.
 */
@Singleton
public class StartPages {

    private static final Logger LOG = Logger.getLogger(StartPages.class);
    /** /proc/self/maps of a process with a few hundred mappings is tens of KiB; more is not read. */
    private static final int MAX_MAPS_BYTES = 1 << 20;

    private final Posix posix;
    private final WardenConfig config;

    public StartPages(Posix posix, WardenConfig config) {
        this.posix = posix;
        this.config = config;
    }

    /** At {@code serve}'s start: in the native executable, releases its pages once it has run a while. */
    public void releaseLater() {
        Duration after = config.memory().releaseStartPagesAfter();
        if (ImageMode.current() != ImageMode.NATIVE_RUN || !after.isPositive()) {
            return;
        }
        Thread.ofPlatform().daemon().name("warden-start-pages").start(() -> {
            try {
                Thread.sleep(after);
            } catch (InterruptedException e) {
                return;
            }
            release();
        });
    }

    /** Pages out every mapping of this process's executable; says in the log how much was resident before and after. */
    void release() {
        String executable;
        List<Range> mappings;
        try {
            executable = Files.readSymbolicLink(Path.of("/proc/self/exe")).toString();
            mappings = mappingsOf(readCapped(Path.of("/proc/self/maps")), executable);
        } catch (IOException e) {
            LOG.infof("Cannot find the executable's pages to give back after start (%s): warden keeps them", e.getMessage());
            return;
        }
        OptionalLong before = residentKib();
        for (Range mapping : mappings) {
            try {
                posix.pageOut(mapping.start(), mapping.length());
            } catch (Posix.ErrnoException e) {
                // EINVAL before Linux 5.4, which has no MADV_PAGEOUT: the pages stay, as they would have.
                LOG.infof("Cannot give back the pages of %s only the start needed (%s): warden keeps them", executable,
                        e.getMessage());
                return;
            }
        }
        OptionalLong after = residentKib();
        LOG.infof("Gave back the pages of %s only the start needed (%d mappings): resident %s MiB, now %s MiB; the kernel"
                + " maps back what warden touches again", executable, mappings.size(), mib(before), mib(after));
    }

    /** A mapping's address range. */
    record Range(long start, long length) {
    }

    /** The mappings of {@code executable} in a {@code /proc/<pid>/maps} text ({@code start-end perms offset dev inode path}). */
    static List<Range> mappingsOf(String maps, String executable) {
        List<Range> ranges = new ArrayList<>();
        for (String line : maps.split("\n")) {
            String[] fields = line.strip().split("\\s+", 6);
            if (fields.length < 6 || !fields[5].equals(executable)) {
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
