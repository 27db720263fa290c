package dev.warden.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.engine.ProcessInfo;
import dev.warden.engine.ProcessTable;
import dev.warden.engine.Signaller;
import dev.warden.lock.Errno;
import dev.warden.lock.NativePosix;
import dev.warden.lock.Posix;
import dev.warden.testing.Await;
import dev.warden.testing.DelegatingPosix;
import dev.warden.testing.Peer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LilbeeFenceTest {

    @TempDir
    Path dir;

    private final ProcessTable processes = new ProcessTable();

    private LilbeeFence fence(Posix posix) {
        return new LilbeeFence(new Signaller(posix, processes), Duration.ofSeconds(2), Duration.ofSeconds(2));
    }

    @Test
    void aHolderIsStoppedWithSigtermAndNothingIsLeftToReport() throws Exception {
        Path lock = Files.writeString(dir.resolve("server.lock"), "");
        try (Peer lilbee = Peer.pythonLock(lock, "flock-exclusive")) {
            LilbeeFence fence = fence(new NativePosix());
            fence.fence(List.of(processes.info(lilbee.pid()).orElseThrow()), "a test");
            assertTrue(lilbee.process().waitFor(10, TimeUnit.SECONDS));
            assertEquals(143, lilbee.process().exitValue(), "SIGTERM");
            Await.until("the stop has ended", () -> !fence.fencing());
            assertTrue(fence.problem().isEmpty(), fence.problem().toString());
        }
    }

    /** A holder warden may not signal (another UID, no CAP_KILL) is loud until it is gone, and retried. */
    @Test
    void aHolderThatCannotBeSignalledIsAProblemNamingItsPidUntilItIsGone() throws Exception {
        Path lock = Files.writeString(dir.resolve("server.lock"), "");
        Posix refusing = new DelegatingPosix(new NativePosix()) {
            @Override
            public boolean pidfdSignal(int pidfd, int signal, boolean group) throws ErrnoException {
                throw new ErrnoException("pidfd_send_signal", Errno.EPERM, "Operation not permitted");
            }
        };
        try (Peer lilbee = Peer.pythonLock(lock, "flock-exclusive")) {
            ProcessInfo holder = processes.info(lilbee.pid()).orElseThrow();
            LilbeeFence fence = fence(refusing);
            fence.fence(List.of(holder), "a test");
            Await.until("the failure is known", () -> fence.problem().isPresent());
            String problem = fence.problem().orElseThrow();
            assertTrue(problem.contains("pid " + lilbee.pid()) && problem.contains("not permitted"), problem);
            assertTrue(lilbee.process().isAlive());
            fence.fence(List.of(holder), "a test");
            assertTrue(fence.problem().isPresent(), "still held: still a problem");
            lilbee.kill();
            fence.clear();
            assertFalse(fence.problem().isPresent(), "the holder is gone");
        }
    }
}
