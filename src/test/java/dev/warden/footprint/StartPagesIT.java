package dev.warden.footprint;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.Await;
import dev.warden.testing.ImageJvm;
import dev.warden.testing.WardenProcess;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The native executable gives back the pages of its own file that only its start needed, and serves on; the JVM is
 * left alone. The resident memory it then settles at under the probes is a benchmark's (docs/BENCHMARKS.md, figure 6).
 */
class StartPagesIT {

    private static final String GAVE_BACK = "Gave back the pages of";

    @TempDir
    Path dir;

    @Test
    void theNativeExecutableGivesBackWhatOnlyItsStartNeededAndServesOn() throws Exception {
        try (WardenProcess warden = WardenProcess.serve("start-pages", List.of("-Dwarden.memory.release-start-pages-after=1s"),
                "--data-root", dir.resolve("root").toString(), "--engine-dir", dir.resolve("engine").toString())) {
            warden.awaitStatus("/q/health/ready", 200);
            long started = ImageJvm.statusKb(warden.pid(), "RssFile");
            if (WardenProcess.nativeExecutable()) {
                Await.until("warden gave its start's pages back", Duration.ofSeconds(30), () -> warden.log().contains(GAVE_BACK));
                long after = ImageJvm.statusKb(warden.pid(), "RssFile");
                assertTrue(after < started / 2, "file-backed resident memory " + started + " kB at ready, " + after
                        + " kB after\n" + warden.log());
            } else {
                Thread.sleep(2_000);
                assertFalse(warden.log().contains(GAVE_BACK), warden.log());
            }
            assertEquals(200, warden.status("/q/health/ready"), "and it serves on, reading back what it needs");
            assertEquals(200, warden.status("/q/health/live"));
        }
    }
}
