package dev.warden.footprint;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.Await;
import dev.warden.testing.FakeEngine;
import dev.warden.testing.ImageJvm;
import dev.warden.testing.WardenProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * warden gives back the pages of its own files that only its start, or an engine's stop, needed, and serves on. The
 * native executable's are reclaimed here (nothing else maps it); in the images, the executable and the JVM's AOT cache
 * are warden's UID's, and ImageContainerIT sees either given back. The resident memory warden then settles at under
 * the probes is a benchmark's (docs/BENCHMARKS.md, figure 6).
 */
class OneOffPagesIT {

    private static final String GAVE_BACK = "Gave back the pages of warden's own files";

    @TempDir
    Path dir;

    @Test
    void wardenGivesBackWhatOnlyItsStartNeededAndServesOn() throws Exception {
        try (WardenProcess warden = WardenProcess.serve("start-pages", List.of("-Dwarden.memory.release-start-pages-after=1s"),
                "--data-root", dir.resolve("root").toString(), "--engine-dir", dir.resolve("engine").toString())) {
            warden.awaitStatus("/q/health/ready", 200);
            long started = ImageJvm.statusKb(warden.pid(), "RssFile");
            Await.until("warden gave its start's pages back", Duration.ofSeconds(30), () -> warden.log().contains(GAVE_BACK));
            long after = ImageJvm.statusKb(warden.pid(), "RssFile");
            // The kernel reclaims only the pages no other process maps: here the JVM's files are the test's JVM's too.
            if (WardenProcess.nativeExecutable()) {
                assertTrue(after < started / 2, "file-backed resident memory " + started + " kB at ready, " + after
                        + " kB after\n" + warden.log());
                Path executable = Path.of(System.getProperty("warden.it.native")).toRealPath();
                List<String> flags = vmFlagsOf(warden.pid(), executable.toString());
                assertFalse(flags.isEmpty(), "the executable is mapped: " + executable);
                // "rr": MADV_RANDOM, so a page touched again is read alone, not with the 128 KiB around it.
                assertTrue(flags.stream().allMatch(f -> List.of(f.split(" ")).contains("rr")), "each mapping read at random: " + flags);
            }
            assertEquals(200, warden.status("/q/health/ready"), "and it serves on, reading back what it needs");
            assertEquals(200, warden.status("/q/health/live"));
        }
    }

    @Test
    void wardenGivesBackWhatAnEnginesStopMappedOnceItIsBehind() throws Exception {
        // The engine dir as lilbee's first start leaves it, so the reaper watches it from warden's start.
        Path engineDir = Files.createDirectories(dir.resolve("engine/engine-users")).getParent();
        try (WardenProcess warden = WardenProcess.serve("one-off-pages", List.of("-Dwarden.memory.release-start-pages-after=3s"),
                "--data-root", dir.resolve("root").toString(), "--engine-dir", engineDir.toString());
                FakeEngine engine = FakeEngine.startLlamaSwap("--port", "0")) {
            Await.until("warden gave its start's pages back", Duration.ofSeconds(30),
                    () -> warden.log().contains(GAVE_BACK + " only the start needed"));
            Path record = engine.writeRecord(engineDir, "chat", FakeEngine.freePort(), List.of());
            assertEquals(143, engine.exitCode(Duration.ofSeconds(20)), "no user: the reaper stops it\n" + warden.log());
            Await.until("the record is gone", () -> !Files.exists(record));
            long stopped = ImageJvm.statusKb(warden.pid(), "RssFile");
            Await.until("warden gave back what the stop mapped", Duration.ofSeconds(30),
                    () -> warden.log().contains(GAVE_BACK + " only an engine's stop needed"));
            long after = ImageJvm.statusKb(warden.pid(), "RssFile");
            if (WardenProcess.nativeExecutable()) {
                assertTrue(after < stopped, "file-backed resident memory " + stopped + " kB after the stop, " + after
                        + " kB after\n" + warden.log());
            }
            assertEquals(200, warden.status("/q/health/ready"), "and it serves on");
        }
    }

    /** The VmFlags line of each mapping of {@code path} in {@code pid}'s smaps. */
    private static List<String> vmFlagsOf(long pid, String path) throws IOException {
        List<String> flags = new ArrayList<>();
        boolean wanted = false;
        for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "smaps"))) {
            if (line.matches("^[0-9a-f]+-[0-9a-f]+ .*")) {
                wanted = line.endsWith(" " + path);
            } else if (wanted && line.startsWith("VmFlags:")) {
                flags.add(line.substring("VmFlags:".length()).strip());
            }
        }
        return flags;
    }
}
