package dev.warden.bench;

import dev.warden.testing.FakeEngine;
import dev.warden.testing.LoopbackHttp;
import dev.warden.testing.Podman;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Figure 6: the image as shipped (its jlink'd JRE, its flags, its AOT cache), started by podman as the
 * manifests run it, against the same image told to ignore its cache ({@code -XX:AOTMode=off}). Needs
 * {@code -Dcontainer.image=...} (.ci/run passes the image it built) and root.
 */
class ImageFootprintBench {

    private static final int STARTS = Integer.getInteger("warden.bench.starts", 10);
    private static final long IDLE_MS = Long.getLong("warden.bench.idle-ms", 60_000);

    @TempDir
    Path dir;

    @Test
    void footprint() throws Exception {
        String image = Podman.image("image");
        Assumptions.assumeFalse(image.isEmpty(), "SKIPPED: no -Dcontainer.image");
        Files.setAttribute(dir, "unix:mode", 0755);
        List<String> rows = new java.util.ArrayList<>();
        for (String mode : List.of("on", "off")) {
            long[] startMicros = new long[STARTS];
            long[] fromProcessMicros = new long[STARTS];
            long rssKb = 0;
            for (int i = 0; i < STARTS; i++) {
                Path volume = Files.createDirectory(dir.resolve(mode + i));
                Files.setAttribute(volume, "unix:uid", 1001);
                String name = "warden-bench-" + System.nanoTime();
                int port = FakeEngine.freePort();
                long started = System.nanoTime();
                Podman.ok("run", "-d", "--name", name, "--read-only", "--tmpfs", "/tmp:rw,mode=1777", "--cap-drop=ALL",
                        "-v", volume + ":/var/lib/lilbee", "-e", "WARDEN_DATA_ROOT=/var/lib/lilbee",
                        "-e", "WARDEN_ENGINE_DIR=/var/lib/lilbee/engine", "-e", "JAVA_OPTS_APPEND=-XX:AOTMode=" + mode,
                        "-p", "127.0.0.1:" + port + ":9096", image);
                try {
                    while (LoopbackHttp.status(port, "/q/health/ready", Duration.ofSeconds(1)) != 200) {
                        Thread.sleep(2);
                    }
                    startMicros[i] = (System.nanoTime() - started) / 1000;
                    Instant ready = Instant.now();
                    // podman's own record of when the container's process started, on the same wall clock.
                    long processStarted = Long.parseLong(Podman.ok("inspect", name, "--format", "{{.State.StartedAt.UnixNano}}"));
                    fromProcessMicros[i] = ((ready.getEpochSecond() * 1_000_000_000L + ready.getNano()) - processStarted) / 1000;
                    if (i == STARTS - 1) {
                        Thread.sleep(IDLE_MS);
                        String pid = Podman.ok("inspect", name, "--format", "{{.State.Pid}}");
                        rssKb = FootprintBench.rssKb(Long.parseLong(pid));
                    }
                } finally {
                    Podman.run("rm", "-f", "-t", "0", name);
                }
            }
            long[] sorted = TakeoverBench.stats(startMicros);
            String what = mode.equals("on") ? "with its AOT cache" : "cache ignored (-XX:AOTMode=off)";
            rows.add(TakeoverBench.row("`podman run` to ready, " + what + " (ms)", sorted, mode.equals("on") ? "< 800 ms" : ""));
            rows.add(TakeoverBench.row("container start to ready, " + what + " (ms)", TakeoverBench.stats(fromProcessMicros),
                    mode.equals("on") ? "< 800 ms" : ""));
            rows.add(String.format(Locale.ROOT, "| resident memory after %d s idle, %s | %.1f MB | | | | 1 | %s |",
                    IDLE_MS / 1000, what, rssKb / 1024.0, mode.equals("on") ? "< 96 MB" : ""));
        }
        Report.section("6. The image", "`" + image + "` run by podman as the manifests run it (read-only root, /tmp a tmpfs,"
                + " no capabilities, a host directory as the volume), with its own JRE, flags and AOT cache. Start: from"
                + " `podman run` (container creation included) until /q/health/ready answers 200 on a published loopback"
                + " port (polled every 2 ms); container start: from the start of the container's process as podman records"
                + " it (`.State.StartedAt`), as a kubelet's container start counts, to the same answer. RSS: VmRSS of"
                + " the JVM after " + IDLE_MS / 1000 + " s idle.",
                List.of("| figure | median | p99 | min | max | runs | goal |", "|---|---|---|---|---|---|---|"), rows);
    }
}
