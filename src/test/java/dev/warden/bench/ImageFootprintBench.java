package dev.warden.bench;

import dev.warden.testing.Await;
import dev.warden.testing.Command;
import dev.warden.testing.ConnectionFlood;
import dev.warden.testing.FakeEngine;
import dev.warden.testing.ImageJvm;
import dev.warden.testing.Podman;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Figure 6: the image as shipped (its jlink'd JRE, its flags, its AOT cache), started by podman as the manifests run
 * it, against the same image told to ignore its cache ({@code -XX:AOTMode=off}), the native image when
 * {@code -Dcontainer.native-image=...} names it, and the floor: a probe-and-flock sidecar in Go's standard library
 * (src/test/go/floor, built here with the Go toolchain) in the same container setup. Needs {@code -Dcontainer.image=...}
 * (.ci/run passes the image it built), Go and root.
 */
class ImageFootprintBench {

    private static final int STARTS = Integer.getInteger("warden.bench.starts", 10);
    private static final long IDLE_MS = Long.getLong("warden.bench.idle-ms", 60_000);
    private static final int LOAD_PER_SECOND = Integer.getInteger("warden.bench.probe-load", 100);
    /** When the reaper's engine appears in its window: early enough that the rest of the window runs after its stop. */
    private static final long ENGINE_AT_MS = Math.min(10_000, IDLE_MS / 4);
    /** Resident memory is the mean of this many samples, evenly from half the window to its end. */
    private static final int SAMPLES = 7;
    private static final String FLOOR_IMAGE = "localhost/warden-floor:bench";
    private static final String FLOOR_EXECUTABLE = "/usr/local/bin/warden-floor";

    @TempDir
    Path dir;

    /**
     * One way to run a sidecar's image: which image, what it is called in the figure, its extra arguments to podman
     * run, whether it is warden (with a reaper to measure), whether its memory is measured under load too, its goals.
     */
    private record Variant(String image, String what, List<String> runArgs, boolean warden, boolean underLoad,
            String startGoal, String rssGoal) {
    }

    /** How a container is probed for the minute its resident memory is read after. */
    private enum Window {
        PROBES("under the manifests' probes"),
        LOAD("under " + LOAD_PER_SECOND + " probes a second"),
        REAPER("under the manifests' probes, the reaper having stopped an engine");

        final String what;

        Window(String what) {
            this.what = what;
        }
    }

    /** What one variant measured, for the ratios to the floor. */
    private record Measured(double startMedianMs, Map<Window, Long> rssKb) {
    }

    @Test
    void footprint() throws Exception {
        String image = Podman.image("image");
        Assumptions.assumeFalse(image.isEmpty(), "SKIPPED: no -Dcontainer.image");
        Files.setAttribute(dir, "unix:mode", 0755);
        String nativeImage = Podman.image("native-image");
        buildFloor(nativeImage.isEmpty() ? image : nativeImage);
        List<Variant> variants = new ArrayList<>(List.of(
                new Variant(image, "JVM image, with its AOT cache", List.of("-e", "JAVA_OPTS_APPEND=-XX:AOTMode=on"), true, true,
                        "≤ 600 ms", "≤ 93.5 MiB"),
                new Variant(image, "JVM image, cache ignored (-XX:AOTMode=off)", List.of("-e", "JAVA_OPTS_APPEND=-XX:AOTMode=off"),
                        true, false, "", "")));
        if (!nativeImage.isEmpty()) {
            variants.add(new Variant(nativeImage, "native image", List.of(), true, true, "≤ 30 ms", "≤ 20 MiB"));
        }
        Variant floor = new Variant(FLOOR_IMAGE, "the floor (Go, probes and flock only)",
                List.of("--entrypoint", FLOOR_EXECUTABLE), false, true, "", "");
        variants.add(floor);

        List<String> rows = new ArrayList<>();
        Map<Variant, Measured> measured = new LinkedHashMap<>();
        for (Variant variant : variants) {
            long[] startMicros = new long[STARTS];
            long[] fromProcessMicros = new long[STARTS];
            for (int i = 0; i < STARTS; i++) {
                String name = "warden-bench-" + System.nanoTime();
                int port = FakeEngine.freePort();
                long started = System.nanoTime();
                try {
                    // Inside the try: a run podman refuses still leaves a created container to remove.
                    run(variant, name, port, volume("start"));
                    while (ConnectionFlood.probe("127.0.0.1", port, "/q/health/ready", 1000) != 200) {
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
            Map<Window, Long> rssKb = residentAfterWindows(variant);
            long[] fromProcess = TakeoverBench.stats(fromProcessMicros);
            measured.put(variant, new Measured(TakeoverBench.pct(fromProcess, 50), rssKb));
            rows.add(TakeoverBench.row("`podman run` to ready, " + variant.what() + " (ms)", TakeoverBench.stats(startMicros), ""));
            rows.add(TakeoverBench.row("container start to ready, " + variant.what() + " (ms)", fromProcess, variant.startGoal()));
            rssKb.forEach((window, kb) -> rows.add(String.format(Locale.ROOT,
                    "| resident memory over the second half of %d s %s, %s | %.1f MiB | | | | %d | %s |", IDLE_MS / 1000,
                    window.what, variant.what(), kb / 1024.0, SAMPLES, window == Window.PROBES ? variant.rssGoal() : "")));
        }
        Measured base = measured.get(floor);
        measured.forEach((variant, m) -> {
            if (variant != floor && variant.underLoad()) {
                rows.add(String.format(Locale.ROOT, "| %s / the floor: container start to ready | %.1f× | | | | | |",
                        variant.what(), m.startMedianMs() / base.startMedianMs()));
                for (Window window : List.of(Window.PROBES, Window.LOAD)) {
                    rows.add(String.format(Locale.ROOT, "| %s / the floor: resident memory %s | %.1f× | | | | | |",
                            variant.what(), window.what, (double) m.rssKb().get(window) / base.rssKb().get(window)));
                }
            }
        });
        for (String shipped : variants.stream().map(Variant::image).distinct().filter(i -> !i.equals(FLOOR_IMAGE)).toList()) {
            rows.add(String.format(Locale.ROOT, "| image size, `%s` | %.1f MB | | | | 1 | |", shipped,
                    Long.parseLong(Podman.ok("image", "inspect", "--format", "{{.Size}}", shipped)) / 1e6));
        }
        if (!nativeImage.isEmpty()) {
            rows.add(executableSize(nativeImage, "/usr/local/bin/warden", "the native executable", "≤ 45 MB"));
        }
        rows.add(executableSize(FLOOR_IMAGE, FLOOR_EXECUTABLE, "the floor's executable", ""));
        Report.section("6. The image", "`" + image + "`" + (nativeImage.isEmpty() ? "" : " and `" + nativeImage + "`")
                + " run by podman as the manifests run it (read-only root, /tmp a tmpfs, no capabilities, a host directory as"
                + " the volume); the JVM image with its own JRE, flags and AOT cache. The floor, measured in the same run and"
                + " the same container setup: src/test/go/floor, Go's standard library alone (`CGO_ENABLED=0`, `-ldflags \"-s"
                + " -w\"`), which takes the flock on server.lock that warden's hold mode takes and answers the three probes,"
                + " nothing else, on the same base image. Start: from `podman run` (container creation included) until"
                + " /q/health/ready answers 200 on a published loopback port (a kubelet-like probe, a new connection each,"
                + " every 2 ms); container start: from the start of the container's process as podman records it"
                + " (`.State.StartedAt`), as a kubelet's container start counts, to the same answer. RSS: VmRSS of the"
                + " sidecar in a container of its own, the mean of " + SAMPLES + " samples evenly over the second half of "
                + IDLE_MS / 1000 + " s (one sample moves by up to 2 MiB with how full a young generation happens to be)"
                + " of one of three: the manifests' kubelet"
                + " probes (/q/health/started every second until it answers 200, then /q/health/ready every 2 s and"
                + " /q/health/live every 10 s); " + LOAD_PER_SECOND + " probes of /q/health/ready a second, each on a new"
                + " connection; the manifests' probes with an engine (a process named llama-swap in warden's container,"
                + " recorded as lilbee records it, no user) appearing " + ENGINE_AT_MS / 1000 + " s in, which the reaper"
                + " stops. One after another, a container each. In MiB, as the manifests' 96Mi memory request counts."
                + " Sizes: podman's, uncompressed.",
                List.of("| figure | median | p99 | min | max | runs | goal |", "|---|---|---|---|---|---|---|"), rows);
    }

    /** The floor's executable, built with Go, in an image on the base of {@code baseImage}: the same layers, the same libc. */
    private void buildFloor(String baseImage) throws Exception {
        Path context = Files.createDirectories(dir.resolve("floor"));
        Command.ok(null, List.of("env", "CGO_ENABLED=0", "GOFLAGS=-mod=mod", go(), "-C", Path.of("src/test/go/floor").toAbsolutePath().toString(),
                "build", "-trimpath", "-ldflags", "-s -w", "-o", context.resolve("warden-floor").toString(), "."));
        Files.writeString(context.resolve("Containerfile"), "FROM " + baseImage + "\nCOPY --chmod=0555 warden-floor "
                + FLOOR_EXECUTABLE + "\nUSER 1001\nENTRYPOINT [\"" + FLOOR_EXECUTABLE + "\"]\nCMD []\n");
        Podman.ok("build", "-q", "-t", FLOOR_IMAGE, context.toString());
    }

    /** Go from the PATH, else where its installer puts it; the figure needs it (CI has it: it builds its Go tools). */
    private static String go() {
        for (String candidate : List.of("go", "/usr/local/go/bin/go")) {
            try {
                if (Command.run(null, List.of(candidate, "version")).exitCode() == 0) {
                    return candidate;
                }
            } catch (Exception e) {
                // not this one
            }
        }
        throw new AssertionError("figure 6 builds its floor with Go: put go on the PATH (or install it at /usr/local/go)");
    }

    private static String executableSize(String image, String path, String what, String goal) throws Exception {
        return String.format(Locale.ROOT, "| %s, %s | %.1f MB | | | | 1 | %s |", what, path,
                Long.parseLong(Podman.ok("run", "--rm", "--entrypoint", "stat", image, "-c", "%s", path)) / 1e6, goal);
    }

    private Path volume(String prefix) throws Exception {
        Path volume = Files.createTempDirectory(dir, prefix);
        // The engine dir as lilbee's first start leaves it, so warden's reaper watches it from its own start.
        for (Path owned : List.of(volume, Files.createDirectory(volume.resolve("engine")))) {
            Files.setAttribute(owned, "unix:uid", 1001);
        }
        return volume;
    }

    private void run(Variant variant, String name, int port, Path volume) throws Exception {
        List<String> args = new ArrayList<>(List.of("run", "-d", "--name", name, "--read-only", "--tmpfs", "/tmp:rw,mode=1777",
                "--cap-drop=ALL", "-v", volume + ":/var/lib/lilbee", "-e", "WARDEN_DATA_ROOT=/var/lib/lilbee",
                "-e", "WARDEN_ENGINE_DIR=/var/lib/lilbee/engine", "-p", "127.0.0.1:" + port + ":9096"));
        args.addAll(variant.runArgs());
        args.add(variant.image());
        Podman.ok(args.toArray(String[]::new));
    }

    /**
     * Each window of {@code variant} in a container of its own, one after another: two containers of one image at once
     * would share the executable's pages, which neither could then give back.
     */
    private Map<Window, Long> residentAfterWindows(Variant variant) throws Exception {
        Map<Window, Long> rss = new LinkedHashMap<>();
        for (Window window : Window.values()) {
            if (window == Window.PROBES || variant.underLoad() && (window != Window.REAPER || variant.warden())) {
                rss.put(window, residentAfter(variant, window));
            }
        }
        return rss;
    }

    /**
     * Resident memory as a pod lives: the kubelet's probes at the manifests' periods (or the load), not the 2 ms
     * polling that times the start (hundreds of requests in the first second: C1 code and buffers for a burst no pod
     * sees).
     */
    private long residentAfter(Variant variant, Window window) throws Exception {
        String name = "warden-bench-" + System.nanoTime();
        int port = FakeEngine.freePort();
        Path volume = volume("window");
        ScheduledExecutorService probes = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().daemon().factory());
        try {
            run(variant, name, port, volume);
            while (ConnectionFlood.probe("127.0.0.1", port, "/q/health/started", 1000) != 200) {
                Thread.sleep(1000);
            }
            long started = System.nanoTime();
            if (window == Window.LOAD) {
                probes.scheduleAtFixedRate(() -> ConnectionFlood.probe("127.0.0.1", port, "/q/health/ready", 1000),
                        0, 1_000_000 / LOAD_PER_SECOND, TimeUnit.MICROSECONDS);
            } else {
                probes.scheduleAtFixedRate(() -> ConnectionFlood.probe("127.0.0.1", port, "/q/health/ready", 1000), 2, 2, TimeUnit.SECONDS);
                probes.scheduleAtFixedRate(() -> ConnectionFlood.probe("127.0.0.1", port, "/q/health/live", 1000), 10, 10, TimeUnit.SECONDS);
            }
            if (window == Window.REAPER) {
                Thread.sleep(ENGINE_AT_MS);
                Path record = engineFor(name, volume);
                Await.until("the reaper stops the engine of " + record.getFileName() + " (" + variant.what() + ")",
                        Duration.ofSeconds(30), () -> !Files.exists(record));
            }
            long pid = Long.parseLong(Podman.ok("inspect", name, "--format", "{{.State.Pid}}"));
            long sum = 0;
            for (int sample = 0; sample < SAMPLES; sample++) {
                long at = IDLE_MS / 2 + IDLE_MS / 2 * sample / (SAMPLES - 1);
                Thread.sleep(Math.max(0, at - (System.nanoTime() - started) / 1_000_000));
                sum += ImageJvm.rssKb(pid);
            }
            return sum / SAMPLES;
        } finally {
            probes.shutdownNow();
            Podman.run("rm", "-f", "-t", "0", name);
        }
    }

    /**
     * An engine for the reaper to stop: a process whose argv[0] is llama-swap, in warden's container and of its UID,
     * and its record as lilbee writes one (its pid as warden sees it, its start as psutil computes it), with no user.
     */
    private static Path engineFor(String container, Path volume) throws Exception {
        Podman.ok("exec", "-d", container, "bash", "-c", "exec -a llama-swap sleep 600");
        String[] engine = new String[0];
        for (int tries = 0; engine.length == 0 && tries < 100; tries++) {
            // PID as warden sees it, HPID as this machine's /proc does.
            engine = Podman.ok("top", container, "pid", "hpid", "args").lines()
                    .map(line -> line.strip().split("\\s+")).filter(f -> f.length > 2 && f[2].equals("llama-swap"))
                    .findFirst().orElse(new String[0]);
            if (engine.length == 0) {
                Thread.sleep(20);
            }
        }
        if (engine.length == 0) {
            throw new AssertionError("the engine never showed in " + container);
        }
        Path engineDir = volume.resolve("engine");
        Path written = engineDir.resolve(".record");
        Files.writeString(written, String.format(Locale.ROOT,
                "{\"pid\": %s, \"pgid\": %s, \"created_at\": %.3f, \"name\": \"llama-swap\", \"member_ports\": [], \"launches\": 1}",
                engine[0], engine[0], FakeEngine.createdAt(Long.parseLong(engine[1]))));
        Files.setAttribute(written, "unix:uid", 1001);
        // Whole or not at all, as lilbee writes it.
        return Files.move(written, engineDir.resolve("llama-swap.state.chat." + engine[0] + ".json"), StandardCopyOption.ATOMIC_MOVE);
    }
}
