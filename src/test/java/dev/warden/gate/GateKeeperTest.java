package dev.warden.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.config.LilbeePaths;
import dev.warden.hold.KeeperLoop;
import dev.warden.lock.FileLocker;
import dev.warden.lock.NativePosix;
import dev.warden.lock.ProcLocks;
import dev.warden.testing.Await;
import dev.warden.testing.KernelLocks;
import dev.warden.testing.Peer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The election and the server-lock watch, with real flocks: flock(1) processes stand in for lilbee
 * holding {@code server.lock}. "This pod" is what the keeper's lock table shows: the machine's
 * {@code /proc/locks}, or an empty table for a keeper that sees no other process (a holder it cannot
 * see is outside its pod, as from inside a PID namespace). The real PID namespaces and the real
 * {@code lilbee serve} are GateInteropIT's.
 */
class GateKeeperTest {

    @TempDir
    Path dir;

    private LilbeePaths paths;
    private Path blindTable;
    private final List<GateKeeper> keepers = new ArrayList<>();

    @BeforeEach
    void dataRoot() throws Exception {
        dir = dir.toRealPath();
        paths = new LilbeePaths(dir.resolve("root"), dir.resolve("root/data"), dir.resolve("root/data/lancedb"),
                Optional.empty(), "test");
        Files.createDirectories(paths.dataDir());
        blindTable = Files.writeString(dir.resolve("empty-locks"), "");
    }

    @AfterEach
    void stopKeepers() {
        keepers.forEach(GateKeeper::stop);
    }

    /** A keeper whose pod holds every process of this machine. */
    private GateKeeper keeper() {
        return keeper(new ProcLocks());
    }

    /** A keeper alone in its pod: it sees no holder but itself. */
    private GateKeeper blindKeeper() {
        return keeper(new ProcLocks(blindTable));
    }

    private GateKeeper keeper(ProcLocks table) {
        GateKeeper keeper = new GateKeeper(new FileLocker(new NativePosix()), table, InstantSource.system(),
                Duration.ofMillis(50), Duration.ofMillis(100));
        keepers.add(keeper);
        keeper.start(paths);
        return keeper;
    }

    @Test
    void electedWithAFreeServerLockItStartsAndIsReadyOnlyWhileThePodsLilbeeHoldsIt() throws Exception {
        GateKeeper keeper = keeper();
        Await.until("started", () -> keeper.snapshot().started());
        assertInstanceOf(GateState.Elected.class, keeper.snapshot().gate());
        assertFalse(keeper.snapshot().serving(), "no lilbee holds server.lock yet");
        assertFalse(Peer.flockCanTake(paths.gateLock()), "the gate is a real flock");
        assertTrue(Peer.flockCanTake(paths.serverLock()), "warden never holds server.lock");
        try (Peer lilbee = Peer.flockHolder(paths.serverLock())) {
            Await.until("serving", () -> keeper.snapshot().serving());
            assertEquals(lilbee.pid(), ((ServerLockState.InPod) keeper.snapshot().server()).pid());
        }
        Await.until("not serving once lilbee is gone", () -> !keeper.snapshot().serving());
        assertTrue(keeper.snapshot().started(), "started stays: Kubernetes reads a startup probe once");
        assertInstanceOf(GateState.Elected.class, keeper.snapshot().gate(), "a lilbee exit keeps the gate in this pod");
    }

    @Test
    void aSecondWardenStandsByNeverStartedAndIsElectedTheMomentTheFirstStops() throws Exception {
        GateKeeper first = keeper();
        Await.until("first started", () -> first.snapshot().started());
        GateKeeper second = keeper();
        Await.until("second stands by", () -> second.snapshot().gate() instanceof GateState.Standby);
        Await.until("second waits in the kernel", () -> KernelLocks.blockedWaiters(paths.gateLock()) == 1);
        assertFalse(second.snapshot().started());
        first.stop();
        Await.until("second started", () -> second.snapshot().started());
        assertInstanceOf(GateState.Elected.class, second.snapshot().gate());
    }

    @Test
    void aServerLockHeldOutsideThePodKeepsTheElectedWardenFromStartingUntilItIsReleased() throws Exception {
        try (Peer stray = Peer.flockHolder(paths.serverLock())) {
            GateKeeper keeper = blindKeeper();
            Await.until("yielded", () -> keeper.snapshot().gate() instanceof GateState.Yielded);
            assertInstanceOf(ServerLockState.HeldOutside.class, keeper.snapshot().server());
            assertTrue(keeper.snapshot().note().orElseThrow().contains("held outside this pod"));
            assertTrue(Peer.flockCanTake(paths.gateLock()), "the gate is let go while the lock is held outside");
            Await.until("waiting in the kernel for the server lock",
                    () -> KernelLocks.blockedWaiters(paths.serverLock()) == 1);
            assertFalse(keeper.snapshot().started());
            stray.kill();
            Await.until("started once the stray is gone", () -> keeper.snapshot().started());
            assertInstanceOf(GateState.Elected.class, keeper.snapshot().gate());
        }
    }

    /**
     * The serving pod's warden restarts while its lilbee serves: a standby wins the gate, finds the
     * lock held outside its pod and lets the gate go, so the restarted warden is started at once
     * (its lilbee serves) and holds the gate again; the standby never starts.
     */
    @Test
    void aWardenRestartedBesideItsServingLilbeeIsStartedAtOnceAndGetsTheGateBack() throws Exception {
        try (Peer lilbee = Peer.flockHolder(paths.serverLock())) {
            GateKeeper standby = blindKeeper();
            Await.until("the standby yielded", () -> standby.snapshot().gate() instanceof GateState.Yielded);
            GateKeeper restarted = keeper();
            Await.until("the restarted warden is started and serving",
                    () -> restarted.snapshot().started() && restarted.snapshot().serving());
            Await.until("the restarted warden holds the gate", () -> restarted.snapshot().gate() instanceof GateState.Elected);
            assertFalse(standby.snapshot().started());
            lilbee.kill();
            Await.until("the standby woke and stands by on the gate", () -> standby.snapshot().gate() instanceof GateState.Standby);
            assertFalse(standby.snapshot().started(), "the serving pod keeps the gate while its lilbee restarts");
            assertInstanceOf(GateState.Elected.class, restarted.snapshot().gate());
        }
    }

    /** A lilbee reset clears the data dir, gate file and server.lock included, while lilbee serves. */
    @Test
    void aDeletedGateFileIsRetakenWithoutEverLettingAStandbyInAndADeletedServerLockStillServes() throws Exception {
        try (Peer lilbee = Peer.flockHolder(paths.serverLock())) {
            GateKeeper elected = keeper();
            Await.until("serving", () -> elected.snapshot().serving());
            GateKeeper standby = blindKeeper();
            Await.until("the standby waits on the gate", () -> standby.snapshot().gate() instanceof GateState.Standby);
            AtomicBoolean twoElected = new AtomicBoolean();
            AtomicBoolean sampling = new AtomicBoolean(true);
            Thread sampler = Thread.ofPlatform().start(() -> {
                while (sampling.get()) {
                    if (standby.snapshot().gate() instanceof GateState.Elected || standby.snapshot().started()) {
                        twoElected.set(true);
                    }
                    Thread.onSpinWait();
                }
            });
            Files.delete(paths.gateLock());
            Files.delete(paths.serverLock());
            Await.until("the new gate file is held", () -> Files.exists(paths.gateLock())
                    && !KernelLocks.flockHolders(paths.gateLock()).isEmpty());
            Thread.sleep(300);
            sampling.set(false);
            sampler.join();
            assertFalse(twoElected.get(), "the standby was elected while the serving pod held the gate");
            assertInstanceOf(GateState.Elected.class, elected.snapshot().gate());
            ServerLockState.InPod inPod = assertInstanceOf(ServerLockState.InPod.class, elected.snapshot().server());
            assertTrue(inPod.replacedFile(), "lilbee holds server.lock on the file the reset unlinked");
            assertTrue(elected.snapshot().serving());
        }
    }

    /** An election this test decides: whether this warden leads is a switch. */
    private static final class Switch implements GateElection {
        final AtomicBoolean leading = new AtomicBoolean();
        final AtomicReference<Duration> stalled = new AtomicReference<>();

        @Override
        public Optional<Duration> stalled(Duration patience) {
            return Optional.ofNullable(stalled.get());
        }

        @Override
        public boolean leading() {
            return leading.get();
        }

        @Override
        public String name() {
            return "warden-gate";
        }

        @Override
        public String identity() {
            return "this-pod";
        }

        @Override
        public Optional<String> holder() {
            return Optional.of(leading.get() ? "this-pod" : "another-pod");
        }

        @Override
        public void close() {
            leading.set(false);
        }
    }

    private GateKeeper leaseKeeper(Switch election, dev.warden.lock.Posix posix) {
        GateKeeper keeper = new GateKeeper(new FileLocker(posix), new ProcLocks(), InstantSource.system(),
                Duration.ofMillis(50), Duration.ofMillis(100));
        keepers.add(keeper);
        dev.warden.engine.ProcessTable processes = new dev.warden.engine.ProcessTable();
        keeper.start(paths, election, new LilbeeFence(new dev.warden.engine.Signaller(new NativePosix(), processes), processes,
                Duration.ofSeconds(2), Duration.ofSeconds(2)));
        return keeper;
    }

    @Test
    void anElectionThatStoppedContendingFailsLivenessNotTheLeaseItLacks() throws Exception {
        Switch election = new Switch();
        GateKeeper keeper = leaseKeeper(election, new NativePosix());
        Await.until("standing by for the Lease", () -> keeper.snapshot().note().orElse("").contains("waiting for the Lease"));
        assertTrue(keeper.health(Duration.ofSeconds(30)).alive(), "waiting for the Lease is alive");
        election.stalled.set(Duration.ofSeconds(40));
        KeeperLoop.KeeperHealth stalled = keeper.health(Duration.ofSeconds(30));
        assertFalse(stalled.alive());
        assertTrue(stalled.detail().contains("warden-gate has not asked the API server anything for 40000 ms"), stalled.detail());
        election.stalled.set(null);
        assertTrue(keeper.health(Duration.ofSeconds(30)).alive());
    }

    @Test
    void inLeaseModeTheGateIsTakenOnlyWithTheLeaseAndALostLeaseFencesThePodsLilbeeAtOnce() throws Exception {
        Switch election = new Switch();
        GateKeeper keeper = leaseKeeper(election, new NativePosix());
        Await.until("standing by for the Lease", () -> keeper.snapshot().note().orElse("").contains("waiting for the Lease"));
        assertFalse(keeper.snapshot().started());
        assertTrue(Peer.flockCanTake(paths.gateLock()), "no gate lock without the Lease");
        election.leading.set(true);
        Await.until("started with the Lease", () -> keeper.snapshot().started());
        assertFalse(Peer.flockCanTake(paths.gateLock()), "the gate lock is taken as well");
        try (Peer lilbee = Peer.pythonHolder(paths.serverLock(), "pass", "/opt/lilbee/bin/lilbee", "serve")) {
            lilbee.awaitLine("locked", Duration.ofSeconds(10));
            Await.until("serving", () -> keeper.snapshot().serving());
            election.leading.set(false);
            Await.until("not started, not serving", () -> !keeper.snapshot().started() && !keeper.snapshot().serving());
            assertTrue(lilbee.process().waitFor(10, java.util.concurrent.TimeUnit.SECONDS), "lilbee was fenced");
            assertEquals(143, lilbee.process().exitValue(), "SIGTERM first");
            Await.until("the gate lock let go", () -> {
                try {
                    return Peer.flockCanTake(paths.gateLock());
                } catch (Exception e) {
                    return false;
                }
            });
        }
        election.leading.set(true);
        Await.until("started again with the Lease back", () -> keeper.snapshot().started());
    }

    @Test
    void aServerLockHolderThatIsNotLilbeeServeIsNeverSignalled() throws Exception {
        Switch election = new Switch();
        try (Peer stranger = Peer.flockHolder(paths.serverLock())) {
            GateKeeper keeper = leaseKeeper(election, new NativePosix());
            // A published round without the Lease and with the holder in the pod has asked the fence (synchronously).
            Await.until("a round outside the Lease with the holder seen", () -> keeper.snapshot().server()
                    instanceof ServerLockState.InPod && keeper.snapshot().note().orElse("").contains("waiting for the Lease"));
            assertTrue(stranger.process().isAlive(), "flock(1) holds server.lock but is not lilbee serve");
            assertFalse(keeper.snapshot().serving());
        }
    }

    /** Lease mode on a volume without locks (flock fails with ENOLCK): the Lease alone elects. */
    @Test
    void onAVolumeThatCannotLockTheLeaseAloneElects() throws Exception {
        dev.warden.lock.Posix noLocks = new dev.warden.testing.DelegatingPosix(new NativePosix()) {
            @Override
            public void lockExclusive(int fd, boolean wait) throws ErrnoException {
                throw new ErrnoException("flock", dev.warden.lock.Errno.ENOLCK, "injected");
            }
        };
        Switch election = new Switch();
        election.leading.set(true);
        GateKeeper keeper = leaseKeeper(election, noLocks);
        Await.until("started by the Lease alone", () -> keeper.snapshot().started());
        assertInstanceOf(GateState.Elected.class, keeper.snapshot().gate());
        election.leading.set(false);
        Await.until("not started without the Lease", () -> !keeper.snapshot().started());
    }

    @Test
    void aGateThatCannotBeTakenIsAnErrorNamingThePathAndRetried() throws Exception {
        Files.createDirectories(paths.gateLock());
        GateKeeper keeper = keeper();
        Await.until("failed", () -> keeper.snapshot().gate() instanceof GateState.Failed);
        GateState.Failed failed = (GateState.Failed) keeper.snapshot().gate();
        assertTrue(failed.message().contains(paths.gateLock().toString()), failed.message());
        assertFalse(keeper.snapshot().started());
        Files.delete(paths.gateLock());
        Await.until("elected once the directory is gone", () -> keeper.snapshot().started());
    }
}
