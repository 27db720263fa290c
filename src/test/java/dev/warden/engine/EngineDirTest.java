package dev.warden.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.Swapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Keep-warm markers as lilbee writes them: the idle minutes inside, the longest opt-in winning. */
class EngineDirTest {

    private static final Duration UNSET = Duration.ofMinutes(5);

    @TempDir
    Path root;

    private EngineDir dir;

    @BeforeEach
    void usersDir() throws Exception {
        dir = new EngineDir(root);
        Files.createDirectories(dir.usersDir());
    }

    private void marker(String token, String content) throws Exception {
        Files.writeString(dir.usersDir().resolve(token + ".keep-warm"), content);
    }

    @Test
    void aMarkerSwappedForAFifoInALoopNeverBlocksAPass() throws Exception {
        // Finding 5: a FIFO swapped in between the listing and the open blocked the reaper in open() for good.
        try (Swapper neighbour = Swapper.start(dir.usersDir(), "a.keep-warm", "7")) {
            assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
                // Until both outcomes were seen often: the race was run, not just the loop.
                int[] seen = new int[2];
                while (seen[0] < 300 || seen[1] < 300) {
                    Duration idle = dir.keepWarmIdle(UNSET).orElseThrow();
                    assertTrue(idle.equals(UNSET) || idle.equals(Duration.ofMinutes(7)), idle.toString());
                    seen[idle.equals(UNSET) ? 0 : 1]++;
                }
            });
        }
    }

    @Test
    void withoutMarkersOrWithEmptyOnesTheSettingApplies() throws Exception {
        assertEquals(Optional.of(UNSET), dir.keepWarmIdle(UNSET));
        marker("0123456789abcdef", "");
        assertEquals(Optional.of(UNSET), dir.keepWarmIdle(UNSET));
    }

    @Test
    void theLongestOptInWins() throws Exception {
        marker("0123456789abcdef", "2");
        marker("fedcba9876543210", "30\n");
        assertEquals(Optional.of(Duration.ofMinutes(30)), dir.keepWarmIdle(UNSET));
    }

    @Test
    void aShortMarkerIsHonouredOverALongerSetting() throws Exception {
        marker("0123456789abcdef", "1");
        assertEquals(Optional.of(Duration.ofMinutes(1)), dir.keepWarmIdle(UNSET));
    }

    @Test
    void zeroMinutesAnywhereMeansNeverUnload() throws Exception {
        marker("0123456789abcdef", "60");
        marker("fedcba9876543210", "0");
        assertEquals(Optional.empty(), dir.keepWarmIdle(UNSET));
    }

    @Test
    void whatIsNotAPlausibleNumberOfMinutesCountsAsUnset() throws Exception {
        for (String bad : new String[] {"-3", "ten", "1e3", "99999999999999999999", "1".repeat(100), "\u0000"}) {
            marker("0123456789abcdef", bad);
            assertEquals(Optional.of(UNSET), dir.keepWarmIdle(UNSET), "marker '" + bad + "'");
        }
    }
}
