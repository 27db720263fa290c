package dev.warden.gate.pod;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.config.LilbeePaths;
import dev.warden.gate.GateDecision;
import dev.warden.gate.GateState;
import dev.warden.gate.GateTimings;
import dev.warden.gate.ServerLockState;
import dev.warden.lock.FileLocker;
import dev.warden.lock.LockReach;
import dev.warden.lock.NativePosix;
import dev.warden.lock.ProcLocks;
import dev.warden.lock.SystemProcFs;
import dev.warden.testing.Await;
import dev.warden.testing.Peer;
import dev.warden.testing.Supervised;
import dev.warden.time.MonotonicClock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The gate keeper at its edges, with real flocks, a real switch socket and the real supervisor running a lilbee
 * stand-in: that what {@link GateDecision} decides (GateDecisionTest's tables) reaches the world. The timings are the
 * product's, shortened alike so that a settle passes in a few seconds; nothing here asserts a duration.
 */
class GateKeeperTest {

    static final GateTimings TIMINGS = new GateTimings(Duration.ofSeconds(3), Duration.ofSeconds(1), Duration.ofMillis(500),
            Duration.ofSeconds(1), Duration.ofMinutes(1), Optional.empty());
    static final Supervised.Settings SUPERVISOR = new Supervised.Settings(Duration.ofSeconds(1), Duration.ofMillis(500));

    @TempDir
    Path dir;

    private LilbeePaths paths;
    private final List<GateKeeper> keepers = new ArrayList<>();
    private final List<Supervised> supervisors = new ArrayList<>();

    @BeforeEach
    void dataRoot() throws Exception {
        dir = dir.toRealPath();
        paths = new LilbeePaths(dir.resolve("root"), dir.resolve("root/data"), dir.resolve("root/data/lancedb"),
                Optional.empty(), "test");
        Files.createDirectories(paths.dataDir());
    }

    @AfterEach
    void stopEverything() {
        keepers.forEach(GateKeeper::stop);
        supervisors.forEach(Supervised::close);
    }

    private GateKeeper keeper(String pod) throws Exception {
        NativePosix posix = new NativePosix();
        GateKeeper keeper = new GateKeeper(new GateKeeper.Edges(new FileLocker(posix), posix, new SystemProcFs(), new ProcLocks(),
                MonotonicClock.SYSTEM, InstantSource.system(), socket(pod), Integer.parseInt(FileLocker.currentUid()),
                Duration.ofMillis(50), Duration.ofMillis(100), LockReach.Factory.system(Duration.ofMillis(250))), TIMINGS);
        keepers.add(keeper);
        keeper.start(paths);
        return keeper;
    }

    private Path socket(String pod) {
        return dir.resolve("run-" + pod).resolve("switch.sock");
    }

    private Supervised lilbee(String pod) throws Exception {
        Supervised supervised = Supervised.standIn("gate-keeper-" + pod, socket(pod), paths.serverLock(), SUPERVISOR);
        supervisors.add(supervised);
        return supervised;
    }

    /** A pod: its warden's gate keeper and its lilbee's supervisor. */
    private record Pod(GateKeeper warden, Supervised lilbee) {
    }

    /** Pod a serving, then pod b standing by. */
    private List<Pod> servingAndStandby() throws Exception {
        GateKeeper a = keeper("a");
        Supervised lilbeeA = lilbee("a");
        Await.until("pod a serves", () -> a.snapshot().serving());
        GateKeeper b = keeper("b");
        Supervised lilbeeB = lilbee("b");
        Await.until("pod b stands by", () -> b.snapshot().gate() instanceof GateState.Standby);
        return List.of(new Pod(a, lilbeeA), new Pod(b, lilbeeB));
    }

    @Test
    void theElectedPodsLilbeeRunsUnderTheGateLockItsSupervisorKeepsAndTheStandbysNever() throws Exception {
        List<Pod> pods = servingAndStandby();
        GateKeeper a = pods.get(0).warden();
        Supervised lilbeeA = pods.get(0).lilbee();
        GateKeeper b = pods.get(1).warden();
        Supervised lilbeeB = pods.get(1).lilbee();
        long servingPid = lilbeeA.serving().getFirst();
        assertEquals(servingPid, ((ServerLockState.InPod) a.snapshot().server()).pid());
        assertFalse(KernelLook.hasOpen(servingPid, paths.gateLock()), "lilbee is given no descriptor of the gate lock");
        assertFalse(Peer.flockCanTake(paths.gateLock()), "locked while lilbee runs");
        assertEquals(List.of(), lilbeeB.serving(), "a standby's lilbee never starts");

        a.stop();
        Await.until("pod b serves once pod a's warden stopped it", () -> b.snapshot().serving());
        assertEquals(List.of(), lilbeeA.serving(), "pod a's lilbee was stopped");
        assertEquals(1, lilbeeB.serving().size());
    }

    /**
     * The supervisor stalled and warden gone: the supervisor keeps the gate locked for lilbee; then SIGKILLed, lilbee dies
     * with it (the kernel's SIGKILL as it exits, stalled or not), and the gate lock goes with both.
     */
    @Test
    void lilbeeDiesWithItsSupervisorAndTheGateIsFreeOnlyThen() throws Exception {
        GateKeeper a = keeper("a");
        Supervised lilbeeA = lilbee("a");
        Await.until("pod a serves", () -> a.snapshot().serving());
        long servingPid = lilbeeA.serving().getFirst();
        Peer.run(Duration.ofSeconds(5), "kill", "-STOP", Long.toString(lilbeeA.pid()));
        a.stop();
        assertFalse(Peer.flockCanTake(paths.gateLock()), "warden gone, the supervisor keeps the gate locked for lilbee");
        Peer.run(Duration.ofSeconds(5), "kill", "-KILL", Long.toString(lilbeeA.pid()));
        Await.until("lilbee gone with its supervisor", () -> !ProcessHandle.of(servingPid).map(ProcessHandle::isAlive).orElse(false));
        Await.until("the gate free", () -> {
            try {
                return Peer.flockCanTake(paths.gateLock());
            } catch (java.io.IOException | InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    /**
     * warden gone and the supervisor stalled, lilbee lives on and so does the gate lock it and its supervisor hold: no
     * other pod is elected until they are gone.
     */
    @Test
    void noOtherPodIsElectedWhileAGoneWardensLilbeeLives() throws Exception {
        GateKeeper a = keeper("a");
        Supervised lilbeeA = lilbee("a");
        Await.until("pod a serves", () -> a.snapshot().serving());
        long servingPid = lilbeeA.serving().getFirst();
        // The supervisor stopped (SIGSTOP): lilbee outlives every permit, and keeps the gate locked.
        Peer.run(Duration.ofSeconds(5), "kill", "-STOP", Long.toString(lilbeeA.pid()));
        try {
            a.stop();
            assertFalse(Peer.flockCanTake(paths.gateLock()), "the gate stays locked while lilbee lives");
            GateKeeper b = keeper("b");
            lilbee("b");
            Await.until("pod b contends", () -> b.snapshot().note().orElse("").contains("another warden holds the gate"));
            assertInstanceOf(GateState.Standby.class, b.snapshot().gate());
            // What the kubelet does to a container whose supervisor fails its liveness probe: every process of it dies.
            lilbeeA.kill();
            assertFalse(ProcessHandle.of(servingPid).map(ProcessHandle::isAlive).orElse(false));
            Await.until("pod b serves once that lilbee is gone", () -> b.snapshot().serving());
        } finally {
            Peer.run(Duration.ofSeconds(5), "kill", "-CONT", Long.toString(lilbeeA.pid()));
        }
    }

    /** A reset deletes the gate file and server.lock under the serving pod: one pod serves afterwards, never two. */
    @Test
    void aResetLeavesOnePodServingOnTheNewFiles() throws Exception {
        List<Pod> pods = servingAndStandby();
        Files.delete(paths.gateLock());
        Files.delete(paths.serverLock());
        Await.until("one pod serves on the new server.lock", () -> pods.stream().filter(p -> p.warden().snapshot().serving())
                .count() == 1 && ProcLocks.idOf(paths.serverLock()).isPresent());
        assertEquals(1, pods.stream().mapToInt(p -> p.lilbee().serving().size()).sum(), "one lilbee, on the new file");
    }

    /** Looks at the kernel's word on one process's descriptors. */
    static final class KernelLook {
        static boolean hasOpen(long pid, Path file) {
            SystemProcFs procs = new SystemProcFs();
            return !new LilbeeProof(procs, MonotonicClock.SYSTEM).look(pid, procs.startTicks(pid).orElseThrow(),
                    java.util.Set.of(ProcLocks.idOf(file).orElseThrow())).open().isEmpty();
        }

    }
}
