package dev.warden.bench;

import dev.warden.config.LilbeePaths;
import dev.warden.engine.ProcessTable;
import dev.warden.gate.pod.GateKeeper;
import dev.warden.gate.GateTimings;
import dev.warden.lock.FileLocker;
import dev.warden.lock.LockReach;
import dev.warden.lock.LockReach;
import dev.warden.lock.NativePosix;
import dev.warden.lock.ProcLocks;
import dev.warden.lock.SystemProcFs;
import dev.warden.testing.Await;
import dev.warden.testing.Peer;
import dev.warden.testing.Supervised;
import dev.warden.time.MonotonicClock;
import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What one gate round costs warden, with the node's own locks and with a neighbour holding hundreds of
 * thousands (the kernel charges their memory to the neighbour, the old round read them all): the gate
 * keeper's thread CPU time over a few seconds of rounds beside a serving lilbee stand-in, and for
 * comparison one read of the whole {@code /proc/locks} as rounds did before.
 */
class GateRoundBench {

    private static final int FLOOD = Integer.getInteger("warden.bench.flood-locks", 300_000);
    private static final Duration MEASURED = Duration.ofSeconds(Integer.getInteger("warden.bench.round-seconds", 10));
    private static final Duration POLL = Duration.ofMillis(50);
    /** A whole read of /proc/locks with the flood takes about a minute here: by hand only. */
    private static final boolean READ_TABLE = Boolean.parseBoolean(System.getProperty("warden.bench.read-lock-table", "true"));

    @TempDir
    Path dir;

    @Test
    void gateRoundCost() throws Exception {
        long own = countLines();
        List<String> rows = new ArrayList<>();
        rows.add(measure("the node's own", own, 0));
        rows.add(measure("with a neighbour's flood", own, FLOOD));
        Report.section("9. Gate round cost",
                "A gate keeper (`serve --mode gate`'s, in the benchmark's JVM) elected beside a serving lilbee stand-in"
                        + " (Python holding an exclusive flock on server.lock, run by the real supervisor), rounds every " + POLL.toMillis() + " ms for "
                        + MEASURED.toSeconds() + " s after a warm-up: the keeper thread's CPU time per round and as a share"
                        + " of a core. A round reads the switch socket, checks the descriptor the supervisor's lilbee holds"
                        + " server.lock through and stats the two lock files; it never reads /proc/locks. For comparison, one read"
                        + " of the whole /proc/locks, which every round did before. The flood: Python holding POSIX locks"
                        + " on files of its own.",
                List.of("| locks on the node | processes seen | CPU per round, µs | share of a core | one read of /proc/locks, ms |",
                        "|---|---|---|---|---|"),
                rows);
    }

    private String measure(String what, long own, int flood) throws Exception {
        Path root = Files.createDirectories(dir.resolve("root-" + flood));
        LilbeePaths paths = new LilbeePaths(root, root.resolve("data"), root.resolve("data/lancedb"), Optional.empty(), "bench");
        Files.createDirectories(paths.dataDir());
        ProcessTable processes = new ProcessTable();
        NativePosix posix = new NativePosix();
        try (Peer neighbour = flood > 0 ? Peer.lockFlood(dir.resolve("flood"), flood) : null) {
            long lines = own + flood;
            Path socket = dir.resolve("run-" + flood).resolve("switch.sock");
            GateKeeper keeper = new GateKeeper(new GateKeeper.Edges(new FileLocker(posix), posix, new SystemProcFs(), new ProcLocks(),
                    MonotonicClock.SYSTEM, InstantSource.system(), socket, Integer.parseInt(FileLocker.currentUid()), POLL,
                    Duration.ofMillis(100), LockReach.Factory.system(Duration.ofMillis(250))), new GateTimings(Duration.ofSeconds(10), Duration.ofSeconds(5), Duration.ofSeconds(2),
                            Duration.ofSeconds(4), Duration.ofMinutes(1), Optional.empty()));
            Supervised lilbee = Supervised.standIn("gate-round-" + flood, socket, paths.serverLock(), Supervised.Settings.CHART);
            keeper.start(paths);
            try {
                Await.until("serving", () -> keeper.snapshot().serving());
                Thread.sleep(2000);
                Thread thread = Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals("gate keeper"))
                        .findFirst().orElseThrow();
                ThreadMXBean threads = ManagementFactory.getThreadMXBean();
                long cpuBefore = threads.getThreadCpuTime(thread.threadId());
                long wallBefore = System.nanoTime();
                Thread.sleep(MEASURED.toMillis());
                long cpu = threads.getThreadCpuTime(thread.threadId()) - cpuBefore;
                long wall = System.nanoTime() - wallBefore;
                double rounds = (double) wall / POLL.toNanos();
                String table = READ_TABLE ? String.format(Locale.ROOT, "%.1f", readTableMillis()) : "(not read: by hand)";
                return String.format(Locale.ROOT, "| %s: %,d | %d | %.0f | %.2f %% | %s |", what, lines,
                        processes.all().size(), cpu / 1000.0 / rounds, 100.0 * cpu / wall, table);
            } finally {
                keeper.stop();
                lilbee.close();
            }
        }
    }

    private static long countLines() throws IOException {
        try (var lines = Files.lines(Path.of("/proc/locks"))) {
            return lines.count();
        }
    }

    private static double readTableMillis() throws IOException {
        long start = System.nanoTime();
        try (InputStream in = Files.newInputStream(Path.of("/proc/locks"))) {
            in.transferTo(java.io.OutputStream.nullOutputStream());
        }
        return (System.nanoTime() - start) / 1e6;
    }
}
