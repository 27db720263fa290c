package dev.warden.bench;

import dev.warden.testing.ImageJvm;
import dev.warden.testing.WardenProcess;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Figure 4: time from process start to ready, and resident memory after a minute idle, JVM mode. */
class FootprintBench {

    private static final int STARTS = Integer.getInteger("warden.bench.starts", 10);
    private static final long IDLE_MS = Long.getLong("warden.bench.idle-ms", 60_000);

    @TempDir
    Path dir;

    @Test
    void footprint() throws Exception {
        List<String> flags = ImageJvm.flags();
        long[] startMicros = new long[STARTS];
        long rssKb = 0;
        for (int i = 0; i < STARTS; i++) {
            long started = System.nanoTime();
            try (WardenProcess warden = WardenProcess.serve("bench-start", flags, "--data-root",
                    dir.resolve("root" + i).toString(), "--engine-dir", dir.resolve("engine" + i).toString())) {
                while (warden.status("/q/health/ready") != 200) {
                    Thread.sleep(2);
                }
                startMicros[i] = (System.nanoTime() - started) / 1000;
                if (i == STARTS - 1) {
                    Thread.sleep(IDLE_MS);
                    rssKb = ImageJvm.rssKb(warden.pid());
                }
            }
        }
        long[] sorted = TakeoverBench.stats(startMicros);
        Report.section("4. Footprint",
                "`warden serve` as a fresh JVM with the flags of Dockerfile.jvm (" + String.join(" ", flags)
                        + "), reaper on, an empty engine dir. Start: from process start until /q/health/ready answers 200"
                        + " (polled every 2 ms). RSS: VmRSS after " + IDLE_MS / 1000 + " s idle.",
                List.of("| figure | median | p99 | min | max | runs | goal |", "|---|---|---|---|---|---|---|"),
                List.of(TakeoverBench.row("start to ready (ms)", sorted, "< 1,500 ms"),
                        String.format(Locale.ROOT, "| resident memory after %d s idle | %.1f MiB | | | | 1 | < 96 MiB |",
                                IDLE_MS / 1000, rssKb / 1024.0)));
    }
}
