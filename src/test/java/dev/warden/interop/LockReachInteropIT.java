package dev.warden.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.FuseMounts;
import dev.warden.testing.Peer;
import dev.warden.testing.PromText;
import dev.warden.testing.WardenProcess;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two wardens on two FUSE mounts (bindfs) of one directory, whose flock(2) locks do not reach each other, as two pods on
 * a ReadWriteMany volume that keeps locks to each mount: the first keeps serving, the other is never ready nor elected,
 * and its readiness, status, log and metric say the locks do not reach across pods, naming the mount.
 */
class LockReachInteropIT {

    /** Looks at both wardens this often, for this long, once the second has started. */
    private static final Duration SAMPLE_EVERY = Duration.ofMillis(100);
    private static final int SAMPLES = 40;

    @TempDir
    Path root;

    @Test
    void inHoldModeTheSecondWardenIsNeverReadyAndSaysWhy() throws Exception {
        try (FuseMounts mounts = FuseMounts.of(root.resolve("volume"), 2)) {
            assertLocksDoNotMeet(mounts);
            try (WardenProcess first = WardenProcess.serve("reach-hold-a", Map.of("POD_NAME", "pod-a"), null, List.of(),
                    "--data-root", mounts.get(0).toString())) {
                first.awaitStatus("/q/health/ready", 200);
                try (WardenProcess second = WardenProcess.serve("reach-hold-b", Map.of("POD_NAME", "pod-b"), null,
                        List.of(), "--data-root", mounts.get(1).toString())) {
                    second.awaitLockData("data-dir.state", "shared");
                    for (int i = 0; i < SAMPLES; i++) {
                        assertEquals(200, first.status("/q/health/ready"), "the first keeps serving, sample " + i);
                        assertEquals(503, second.status("/q/health/ready"), "the second is never ready, sample " + i);
                        Thread.sleep(SAMPLE_EVERY);
                    }
                    String why = second.awaitLockData("data-dir.state", "shared").toString();
                    assertTrue(why.contains("do not reach") && why.contains("FUSE filesystem"), why);
                    assertTrue(second.log().contains("the locks do not reach across pods"), second.log());
                    assertEquals(1.0, PromText.value(second.text("/q/metrics"), "warden_lock_shared", Map.of("lock", "data-dir"))
                            .orElseThrow(), "the metric");
                    assertFalse(second.log().contains("pod-a"), "nothing of the heartbeat file is quoted");
                    first.terminate();
                    second.awaitStatus("/q/health/ready", 200);
                }
            }
        }
    }

    @Test
    void inFileGateModeTheSecondWardenIsNeverElected() throws Exception {
        try (FuseMounts mounts = FuseMounts.of(root.resolve("volume"), 2)) {
            try (WardenProcess first = gate("reach-gate-a", "pod-a", mounts.get(0))) {
                first.awaitJson("/api/v1/status", "/gate/state", s -> s.asText().equals("elected"));
                try (WardenProcess second = gate("reach-gate-b", "pod-b", mounts.get(1))) {
                    second.awaitJson("/api/v1/status", "/gate/detail", d -> d.asText().contains("do not reach"));
                    for (int i = 0; i < SAMPLES; i++) {
                        assertEquals("elected", first.json("/api/v1/status").at("/gate/state").asText(), "sample " + i);
                        assertFalse(second.json("/api/v1/status").at("/gate/state").asText().equals("elected"),
                                "the second is never elected, sample " + i);
                        Thread.sleep(SAMPLE_EVERY);
                    }
                    assertEquals(1.0, PromText.value(second.text("/q/metrics"), "warden_lock_shared", Map.of("lock", "gate"))
                            .orElseThrow(), "the metric");
                    first.terminate();
                    second.awaitJson("/api/v1/status", "/gate/state", s -> s.asText().equals("elected"));
                }
            }
        }
    }

    private static WardenProcess gate(String name, String pod, Path dataRoot) throws Exception {
        return WardenProcess.serve(name, Map.of("POD_NAME", pod), null, List.of(WardenProcess.socketSetting(
                WardenProcess.switchSocket())), "--mode", "gate", "--data-root", dataRoot.toString());
    }

    /** The premise, checked with util-linux flock(1): a lock taken through one mount does not exclude the other's. */
    private static void assertLocksDoNotMeet(FuseMounts mounts) throws Exception {
        Path a = mounts.get(0).resolve("probe.lock");
        Path b = mounts.get(1).resolve("probe.lock");
        assertEquals(0, Peer.run(Duration.ofSeconds(10), "flock", "-n", a.toString(), "flock", "-n", b.toString(), "true"),
                "two bindfs mounts of one directory do not share flock(2) locks on this kernel");
    }
}
