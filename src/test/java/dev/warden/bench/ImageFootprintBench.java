package dev.warden.bench;

import dev.warden.testing.FakeEngine;
import dev.warden.testing.ImageJvm;
import dev.warden.testing.LoopbackHttp;
import dev.warden.testing.Podman;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Figure 6: the image as shipped (its jlink'd JRE, its flags, its AOT cache), started by podman as the
 * manifests run it, against the same image told to ignore its cache ({@code -XX:AOTMode=off}), and the native
 * image beside them when {@code -Dcontainer.native-image=...} names it. Needs {@code -Dcontainer.image=...}
 * (.ci/run passes the image it built) and root.
 */
class ImageFootprintBench {

    private static final int STARTS = Integer.getInteger("warden.bench.starts", 10);
    private static final long IDLE_MS = Long.getLong("warden.bench.idle-ms", 60_000);

    @TempDir
    Path dir;

    /** One way to run warden's image: which image, what it is called in the figure, its extra environment, its goals. */
    private record Variant(String image, String what, List<String> env, String startGoal, String rssGoal) {
    }

    @Test
    void footprint() throws Exception {
        String image = Podman.image("image");
        Assumptions.assumeFalse(image.isEmpty(), "SKIPPED: no -Dcontainer.image");
        Files.setAttribute(dir, "unix:mode", 0755);
        List<Variant> variants = new ArrayList<>(List.of(
                new Variant(image, "JVM image, with its AOT cache", List.of("-e", "JAVA_OPTS_APPEND=-XX:AOTMode=on"), "< 800 ms", "< 96 MiB"),
                new Variant(image, "JVM image, cache ignored (-XX:AOTMode=off)", List.of("-e", "JAVA_OPTS_APPEND=-XX:AOTMode=off"), "", "")));
        String nativeImage = Podman.image("native-image");
        if (!nativeImage.isEmpty()) {
            variants.add(new Variant(nativeImage, "native image", List.of(), "< 50 ms", "< 40 MiB"));
        }
        List<String> rows = new ArrayList<>();
        for (Variant variant : variants) {
            long[] startMicros = new long[STARTS];
            long[] fromProcessMicros = new long[STARTS];
            for (int i = 0; i < STARTS; i++) {
                String name = "warden-bench-" + System.nanoTime();
                int port = FakeEngine.freePort();
                long started = System.nanoTime();
                try {
                    // Inside the try: a run podman refuses still leaves a created container to remove.
                    run(variant, name, port, Files.createTempDirectory(dir, "start"));
                    while (LoopbackHttp.status(port, "/q/health/ready", Duration.ofSeconds(1)) != 200) {
                        Thread.sleep(2);
                    }
                    startMicros[i] = (System.nanoTime() - started) / 1000;
                    Instant ready = Instant.now();
                    // podman's own record of when the container's process started, on the same wall clock.
                    long processStarted = Long.parseLong(Podman.ok("inspect", name, "--format", "{{.State.StartedAt.UnixNano}}"));
                    fromProcessMicros[i] = ((ready.getEpochSecond() * 1_000_000_000L + ready.getNano()) - processStarted) / 1000;
                } finally {
                    Podman.run("rm", "-f", "-t", "0", name);
                }
            }
            long rssKb = rssUnderProbes(variant);
            rows.add(TakeoverBench.row("`podman run` to ready, " + variant.what() + " (ms)", TakeoverBench.stats(startMicros), ""));
            rows.add(TakeoverBench.row("container start to ready, " + variant.what() + " (ms)", TakeoverBench.stats(fromProcessMicros),
                    variant.startGoal()));
            rows.add(String.format(Locale.ROOT, "| resident memory after %d s under the manifests' probes, %s | %.1f MiB | | | | 1 | %s |",
                    IDLE_MS / 1000, variant.what(), rssKb / 1024.0, variant.rssGoal()));
        }
        for (String shipped : variants.stream().map(Variant::image).distinct().toList()) {
            rows.add(String.format(Locale.ROOT, "| image size, `%s` | %.1f MB | | | | 1 | |", shipped,
                    Long.parseLong(Podman.ok("image", "inspect", "--format", "{{.Size}}", shipped)) / 1e6));
        }
        if (!nativeImage.isEmpty()) {
            rows.add(String.format(Locale.ROOT, "| the native executable, /usr/local/bin/warden | %.1f MB | | | | 1 | < 60 MB |",
                    Long.parseLong(Podman.ok("run", "--rm", "--entrypoint", "stat", nativeImage, "-c", "%s", "/usr/local/bin/warden")) / 1e6));
        }
        Report.section("6. The image", "`" + image + "`" + (nativeImage.isEmpty() ? "" : " and `" + nativeImage + "`")
                + " run by podman as the manifests run it (read-only root, /tmp a tmpfs, no capabilities, a host directory as"
                + " the volume); the JVM image with its own JRE, flags and AOT cache. Start: from"
                + " `podman run` (container creation included) until /q/health/ready answers 200 on a published loopback"
                + " port (polled every 2 ms); container start: from the start of the container's process as podman records"
                + " it (`.State.StartedAt`), as a kubelet's container start counts, to the same answer. RSS: VmRSS of"
                + " warden in a container of its own, probed as the manifests' kubelet probes it (/q/health/started every"
                + " second until it answers 200, then /q/health/ready every 2 s and /q/health/live every 10 s), after "
                + IDLE_MS / 1000 + " s of that. In MiB, as the manifests' 96Mi memory request counts. Sizes: podman's, uncompressed.",
                List.of("| figure | median | p99 | min | max | runs | goal |", "|---|---|---|---|---|---|---|"), rows);
    }

    private void run(Variant variant, String name, int port, Path volume) throws Exception {
        Files.setAttribute(volume, "unix:uid", 1001);
        List<String> args = new ArrayList<>(List.of("run", "-d", "--name", name, "--read-only", "--tmpfs", "/tmp:rw,mode=1777",
                "--cap-drop=ALL", "-v", volume + ":/var/lib/lilbee", "-e", "WARDEN_DATA_ROOT=/var/lib/lilbee",
                "-e", "WARDEN_ENGINE_DIR=/var/lib/lilbee/engine", "-p", "127.0.0.1:" + port + ":9096"));
        args.addAll(variant.env());
        args.add(variant.image());
        Podman.ok(args.toArray(String[]::new));
    }

    /**
     * Resident memory as a pod lives: the kubelet's probes at the manifests' periods, not the 2 ms
     * polling that times the start (hundreds of requests in the first second, which alone left about
     * 2 MiB more resident: C1 code and buffers for a burst no pod sees).
     */
    private long rssUnderProbes(Variant variant) throws Exception {
        String name = "warden-bench-" + System.nanoTime();
        int port = FakeEngine.freePort();
        try {
            run(variant, name, port, Files.createTempDirectory(dir, "probed"));
            while (LoopbackHttp.status(port, "/q/health/started", Duration.ofSeconds(1)) != 200) {
                Thread.sleep(1000);
            }
            for (long tick = 0; tick < IDLE_MS / 2000; tick++) {
                Thread.sleep(2000);
                LoopbackHttp.status(port, "/q/health/ready", Duration.ofSeconds(1));
                if (tick % 5 == 4) {
                    LoopbackHttp.status(port, "/q/health/live", Duration.ofSeconds(1));
                }
            }
            return ImageJvm.rssKb(Long.parseLong(Podman.ok("inspect", name, "--format", "{{.State.Pid}}")));
        } finally {
            Podman.run("rm", "-f", "-t", "0", name);
        }
    }
}
