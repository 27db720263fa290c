package dev.warden.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.config.LilbeePaths;
import dev.warden.engine.ProcessTable;
import dev.warden.engine.Signaller;
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
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The election and the server-lock watch, with real flocks: flock(1) and Python processes stand in for
 * lilbee holding {@code server.lock}. "This pod" is the processes the keeper's {@code /proc} shows: the
 * machine's, a directory of links to chosen ones, or an empty one for a keeper that sees no other
 * process (a holder it cannot see is outside its pod, as from inside a PID namespace). The real PID
 * namespaces and the real {@code lilbee serve} are GateInteropIT's.
 */
class GateKeeperTest {

    @TempDir
    Path dir;

    /** The fence's grace and kill timeout here, as warden adds them up. */
    private static final Duration SETTLE = Duration.ofSeconds(4);
    /** How long a lilbee may be gone before the gate goes to a standby: long, but where a test shortens it. */
    private Duration handoverAfter = Duration.ofMinutes(1);

    private LilbeePaths paths;
    private Path blindProc;
    private final ProcessTable processes = new ProcessTable();
    private final List<GateKeeper> keepers = new ArrayList<>();

    @BeforeEach
    void dataRoot() throws Exception {
        dir = dir.toRealPath();
        paths = new LilbeePaths(dir.resolve("root"), dir.resolve("root/data"), dir.resolve("root/data/lancedb"),
                Optional.empty(), "test");
        Files.createDirectories(paths.dataDir());
        blindProc = Files.createDirectories(dir.resolve("empty-proc"));
    }

    @AfterEach
    void stopKeepers() {
        keepers.forEach(GateKeeper::stop);
    }

    /** A keeper whose pod holds every process of this machine. */
    private GateKeeper keeper() {
        return keeper(Path.of("/proc"));
    }

    /** A keeper alone in its pod: it sees no holder but itself. */
    private GateKeeper blindKeeper() {
        return keeper(blindProc);
    }

    /** A keeper whose pod is {@code members} alone. */
    private GateKeeper keeperBeside(Peer... members) throws Exception {
        Path pod = Files.createTempDirectory(dir, "pod");
        for (Peer member : members) {
            Files.createSymbolicLink(pod.resolve(Long.toString(member.pid())), Path.of("/proc", Long.toString(member.pid())));
        }
        return keeper(pod);
    }

    private GateKeeper keeper(Path proc) {
        GateKeeper keeper = unstarted(proc, new NativePosix());
        keeper.start(paths);
        return keeper;
    }

    private GateKeeper unstarted(Path proc, dev.warden.lock.Posix posix) {
        GateKeeper keeper = new GateKeeper(new FileLocker(posix), new ServerLockHolders(processes, proc), new ProcLocks(),
                new LilbeeFence(new Signaller(posix, processes), Duration.ofSeconds(2), Duration.ofSeconds(2)),
                InstantSource.system(), new GateKeeper.Timings(Duration.ofMillis(50), Duration.ofMillis(100), SETTLE, handoverAfter));
        keepers.add(keeper);
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

    /**
     * A warden that has just started, elected at once, cannot know whether a reset just deleted server.lock under
     * another pod's lilbee: with server.lock missing or new it waits a settle before its lilbee may start (the other
     * pod's restarted warden fences that lilbee meanwhile: ResetSoak), with one unchanged for longer it starts at once.
     */
    @Test
    void aFreshWardenWaitsASettleUnlessServerLockHasStoodLongerThanThat() throws Exception {
        long began = System.nanoTime();
        GateKeeper fresh = keeper();
        Await.until("started", () -> fresh.snapshot().started());
        Duration missing = Duration.ofNanos(System.nanoTime() - began);
        assertTrue(missing.compareTo(SETTLE) >= 0, "started after " + missing.toMillis() + " ms, before the settle");
        fresh.stop();

        Files.writeString(paths.serverLock(), "");
        Thread.sleep(SETTLE.toMillis() + 100);
        long again = System.nanoTime();
        GateKeeper restarted = keeper();
        Await.until("started", () -> restarted.snapshot().started());
        Duration standing = Duration.ofNanos(System.nanoTime() - again);
        assertTrue(standing.compareTo(SETTLE) < 0, "a server.lock older than the settle: started at once, took "
                + standing.toMillis() + " ms");
    }

    /** warden.gate.settle is a floor over the kubelet's stop; a warden's own fence is never cut short by it. */
    @Test
    void theSettleIsNeverShorterThanAWardensOwnFence() {
        Duration grace = Duration.ofSeconds(2);
        Duration kill = Duration.ofSeconds(5);
        assertEquals(Duration.ofSeconds(10), GateKeeper.settle(Duration.ofSeconds(10), grace, kill));
        assertEquals(Duration.ofSeconds(7), GateKeeper.settle(Duration.ofSeconds(1), grace, kill));
        assertEquals(Duration.ofSeconds(25), GateKeeper.settle(Duration.ofSeconds(10), Duration.ofSeconds(20), kill));
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

    private record TwoPods(GateKeeper serving, GateKeeper standby) {
    }

    /** A pod elected and served by its lilbee, another standing by; then that lilbee exits. */
    private TwoPods servedUntilItsLilbeeExits(Duration handover) throws Exception {
        handoverAfter = handover;
        GateKeeper serving = keeper();
        Await.until("started", () -> serving.snapshot().started());
        GateKeeper standby = blindKeeper();
        Await.until("the other stands by", () -> standby.snapshot().gate() instanceof GateState.Standby);
        try (Peer lilbee = Peer.flockHolder(paths.serverLock())) {
            Await.until("serving", () -> serving.snapshot().serving());
        }
        return new TwoPods(serving, standby);
    }

    /**
     * The serving pod's lilbee dies and is not back (the kubelet's back-off) within handover-after: its warden is
     * not started any more and lets the gate go; the standby, waiting in the kernel, is elected and started (its
     * lilbee starts at once, no back-off), and the first stands by.
     */
    @Test
    void aLilbeeGoneLongerThanTheHandoverTimeHandsTheGateToTheStandby() throws Exception {
        TwoPods pods = servedUntilItsLilbeeExits(Duration.ofMillis(500));
        GateKeeper serving = pods.serving();
        GateKeeper standby = pods.standby();
        Await.until("the serving pod hands the gate over", () -> serving.snapshot().note().orElse("").contains("was not back within 500 ms"));
        assertFalse(serving.snapshot().started(), "not started once it handed over");
        // Both wardens started less than a settle ago, beside a server.lock as young: the standby waits the settle.
        Await.until("the standby is elected and started", SETTLE.multipliedBy(3), () -> standby.snapshot().started());
        assertInstanceOf(GateState.Elected.class, standby.snapshot().gate());
        assertInstanceOf(GateState.Standby.class, serving.snapshot().gate());
    }

    /** A lilbee restarted within handover-after (the kubelet's first restart) keeps the gate in its pod. */
    @Test
    void aLilbeeBackWithinTheHandoverTimeKeepsTheGate() throws Exception {
        TwoPods pods = servedUntilItsLilbeeExits(Duration.ofSeconds(30));
        GateKeeper serving = pods.serving();
        GateKeeper standby = pods.standby();
        Await.until("not serving", () -> !serving.snapshot().serving());
        try (Peer again = Peer.flockHolder(paths.serverLock())) {
            Await.until("serving again", () -> serving.snapshot().serving());
            assertTrue(serving.snapshot().started());
            assertInstanceOf(GateState.Standby.class, standby.snapshot().gate());
            assertFalse(standby.snapshot().started());
        }
    }

    /** Samples {@code check} in a tight loop until closed, and remembers whether it was ever true. */
    private static final class Watch implements AutoCloseable {
        private final AtomicBoolean seen = new AtomicBoolean();
        private final AtomicBoolean sampling = new AtomicBoolean(true);
        private final Thread sampler;

        Watch(java.util.function.BooleanSupplier check) {
            sampler = Thread.ofPlatform().start(() -> {
                while (sampling.get()) {
                    if (check.getAsBoolean()) {
                        seen.set(true);
                    }
                    Thread.onSpinWait();
                }
            });
        }

        boolean seen() throws InterruptedException {
            close();
            return seen.get();
        }

        @Override
        public void close() throws InterruptedException {
            sampling.set(false);
            sampler.join();
        }
    }

    private static boolean electedOrStarted(GateKeeper keeper) {
        return keeper.snapshot().gate() instanceof GateState.Elected || keeper.snapshot().started();
    }

    /**
     * A lilbee reset clears the data dir, gate file and server.lock included, while lilbee serves: the
     * elected warden takes the new gate file before letting the old go, stops its lilbee (which holds the
     * deleted file) so that the kubelet restarts it onto the new one, and no standby is elected meanwhile.
     */
    @Test
    void aResetKeepsTheGateInThePodAndStopsItsLilbeeOntoTheNewFile() throws Exception {
        try (Peer lilbee = Peer.pythonLock(paths.serverLock(), "flock-exclusive")) {
            GateKeeper elected = keeper();
            Await.until("serving", () -> elected.snapshot().serving());
            GateKeeper standby = blindKeeper();
            Await.until("the standby waits on the gate", () -> standby.snapshot().gate() instanceof GateState.Standby);
            try (Watch twoElected = new Watch(() -> electedOrStarted(standby))) {
                Files.delete(paths.gateLock());
                Files.delete(paths.serverLock());
                assertTrue(lilbee.process().waitFor(10, TimeUnit.SECONDS), "the lilbee on the deleted file was stopped");
                assertEquals(143, lilbee.process().exitValue(), "SIGTERM first");
                Await.until("not serving on the deleted file", () -> !elected.snapshot().serving());
                Await.until("the standby let in on the old gate file went back to waiting on the new one",
                        () -> KernelLocks.blockedWaiters(paths.gateLock()) == 1);
                assertFalse(twoElected.seen(), "the standby was elected while the serving pod held the gate");
            }
            assertInstanceOf(GateState.Elected.class, elected.snapshot().gate());
            assertTrue(elected.snapshot().started(), "the kubelet may restart lilbee at once");
            try (Peer restarted = Peer.pythonLock(paths.serverLock(), "flock-exclusive")) {
                Await.until("serving from the new file", () -> elected.snapshot().serving());
            }
        }
    }

    /** A neighbour that may only read server.lock takes a POSIX read lock on it in a standby pod. */
    @Test
    void aPosixReadLockInAStandbyPodNeverMakesItStartedOrReady() throws Exception {
        try (Peer lilbee = Peer.pythonLock(paths.serverLock(), "flock-exclusive")) {
            GateKeeper elected = keeperBeside(lilbee);
            Await.until("serving", () -> elected.snapshot().serving());
            try (Peer decoy = Peer.pythonLock(paths.serverLock(), "posix-read", "lilbee", "serve")) {
                GateKeeper standby = keeperBeside(decoy);
                try (Watch fooled = new Watch(() -> electedOrStarted(standby) || standby.snapshot().serving())) {
                    Await.until("the standby waits in the kernel", () -> KernelLocks.blockedWaiters(paths.gateLock()) == 1);
                    Thread.sleep(500); // rounds of the standby's with the decoy's lock in its pod; nothing is awaited
                    assertFalse(fooled.seen(), "a POSIX read lock made the standby started or ready");
                }
                assertInstanceOf(ServerLockState.NotInPod.class, standby.snapshot().server());
                assertTrue(decoy.process().isAlive());
            }
        }
    }

    /**
     * A warden restarted beside its serving lilbee while another, started on a free path, holds the gate: a
     * standby until it earns the gate (never started without it: the standby tests show it). The holder, whose own lilbee
     * lost the race for server.lock, finds it held outside its pod on a second look and lets the gate go, so
     * the pod whose lilbee serves gets it; before, both stayed unready for good (ResetSoak found it).
     */
    @Test
    void aStartedWardenWhoseLilbeeLostTheLockLetsTheGateGoToThePodWhoseLilbeeHoldsIt() throws Exception {
        GateKeeper other = blindKeeper();
        Await.until("the other pod is started", () -> other.snapshot().started());
        try (Peer lilbee = Peer.pythonLock(paths.serverLock(), "flock-exclusive")) {
            GateKeeper beside = keeperBeside(lilbee);
            Await.until("it finds its lilbee", () -> beside.snapshot().server() instanceof ServerLockState.InPod);
            Await.until("the holder lets the gate go", () -> other.snapshot().gate() instanceof GateState.Yielded);
            assertFalse(other.snapshot().started(), "not started without the gate");
            Await.until("started and serving once it holds the gate", () -> beside.snapshot().serving());
            assertInstanceOf(ServerLockState.HeldOutside.class, other.snapshot().server());
            assertTrue(lilbee.process().isAlive(), "a lilbee on the file at the path is not fenced in file mode");
        }
    }

    /**
     * The serving pod's warden dies and a reset clears the data dir while no warden watches that pod: the
     * standby, elected on a path the reset freed, waits the fence's time before its lilbee may start; the
     * restarted warden, which knows nothing of the file its lilbee holds, finds it by the deleted lock's name
     * and stops it meanwhile, and is never ready beside it.
     */
    @Test
    void aResetThenTheServingWardenKilledNeverLetsTwoServe() throws Exception {
        try (Peer lilbee = Peer.pythonLock(paths.serverLock(), "flock-exclusive")) {
            GateKeeper first = keeperBeside(lilbee);
            Await.until("serving", () -> first.snapshot().serving());
            GateKeeper standby = blindKeeper();
            Await.until("the standby waits", () -> standby.snapshot().gate() instanceof GateState.Standby);
            try (Watch split = new Watch(() -> lilbee.process().isAlive() && standby.snapshot().started())) {
                first.stop();
                Files.delete(paths.gateLock());
                Files.delete(paths.serverLock());
                // Elected on the path the reset freed, or (having looked before the reset) yielded to the old lilbee.
                Await.until("the standby won the gate the killed warden let go",
                        () -> standby.snapshot().gate() instanceof GateState.Elected
                                || standby.snapshot().gate() instanceof GateState.Yielded);
                GateKeeper restarted = keeperBeside(lilbee);
                try (Watch readyBesideIt = new Watch(() -> restarted.snapshot().serving() && lilbee.process().isAlive())) {
                    assertTrue(lilbee.process().waitFor(10, TimeUnit.SECONDS), "the lilbee on the deleted file was stopped");
                    assertEquals(143, lilbee.process().exitValue(), "SIGTERM first");
                    assertFalse(readyBesideIt.seen(), "ready while its lilbee held a deleted server.lock");
                }
                Await.until("exactly one pod started afterwards",
                        () -> standby.snapshot().started() ^ restarted.snapshot().started());
                assertFalse(split.seen(), "the standby started while the old lilbee still held the deleted lock");
            }
        }
    }

    /**
     * A neighbour with write access replaces the gate file with one it flocks, and deletes server.lock, before the
     * serving warden's next round: the warden keeps the old gate file while its lilbee holds a lock, so the standby waiting on
     * it is never let in, and stops its lilbee, which holds the deleted server.lock.
     */
    @Test
    void aGateFileRacedByANeighbourIsKeptWhileThePodsLilbeeHoldsALock() throws Exception {
        try (Peer lilbee = Peer.pythonLock(paths.serverLock(), "flock-exclusive")) {
            GateKeeper elected = keeperBeside(lilbee);
            Await.until("serving", () -> elected.snapshot().serving());
            GateKeeper standby = blindKeeper();
            Await.until("the standby waits", () -> KernelLocks.blockedWaiters(paths.gateLock()) == 1);
            try (Watch twoElected = new Watch(() -> electedOrStarted(standby))) {
                // The neighbour's file, locked before it replaces the gate file: taken first whatever the timing (the
                // warden retakes a deleted gate file within a poll, before a neighbour started only then could).
                Path raced = paths.gateLock().resolveSibling("raced.lock");
                try (Peer neighbour = Peer.flockHolder(raced)) {
                    Files.move(raced, paths.gateLock(), java.nio.file.StandardCopyOption.ATOMIC_MOVE,
                            java.nio.file.StandardCopyOption.REPLACE_EXISTING);
                    Files.delete(paths.serverLock());
                    assertTrue(lilbee.process().waitFor(10, TimeUnit.SECONDS), "the lilbee on the deleted file was stopped");
                    Await.until("the warden stands by once its lilbee is gone",
                            () -> elected.snapshot().gate() instanceof GateState.Standby && !elected.snapshot().started());
                    Await.until("both wardens wait on the neighbour's file",
                            () -> KernelLocks.blockedWaiters(paths.gateLock()) == 2);
                    assertFalse(twoElected.seen(), "the standby was elected on a gate file the neighbour holds");
                    // Stopped while they wait: their waits end on the neighbour's file, not on one made anew while
                    // the temporary directory is deleted.
                    elected.stop();
                    standby.stop();
                }
            }
            Await.until("the stopped wardens' waits have ended", () -> KernelLocks.blockedWaiters(paths.gateLock()) == 0);
        }
    }

    /**
     * A neighbour holds 300,000 locks on the node (the kernel charges their memory to it): the keeper's
     * rounds never read the node's lock table, so they go on every poll interval and liveness stays UP.
     * (It read the whole /proc/locks every round before: 36-64 s a round, liveness DOWN.)
     */
    @Test
    void aNeighbourFloodingTheLockTableNeitherSlowsTheRoundsNorFailsLiveness() throws Exception {
        try (Peer flood = Peer.lockFlood(dir.resolve("flood"), 300_000);
                Peer lilbee = Peer.pythonLock(paths.serverLock(), "flock-exclusive")) {
            GateKeeper keeper = keeper();
            Await.until("serving", () -> keeper.snapshot().serving());
            Duration longest = Duration.ZERO;
            long end = System.nanoTime() + Duration.ofSeconds(3).toNanos();
            while (System.nanoTime() < end) {
                KeeperLoop.KeeperHealth health = keeper.health(Duration.ofSeconds(30));
                assertTrue(health.alive(), health.detail());
                longest = health.sinceLastRound().compareTo(longest) > 0 ? health.sinceLastRound() : longest;
                Thread.sleep(10);
            }
            assertTrue(longest.compareTo(Duration.ofSeconds(2)) < 0, "a round took " + longest.toMillis() + " ms");
            assertTrue(keeper.snapshot().serving());
            lilbee.kill();
            Await.until("the lilbee's exit is seen as ever", () -> !keeper.snapshot().serving());
        }
    }

    /** An election this test decides: whether this warden leads is a switch. */
    private static final class Switch implements GateElection {
        final AtomicBoolean leading = new AtomicBoolean();
        final AtomicReference<Duration> stalled = new AtomicReference<>();
        final AtomicBoolean decided = new AtomicBoolean(true);

        @Override
        public boolean decided() {
            return decided.get();
        }

        final java.util.concurrent.atomic.AtomicInteger asides = new java.util.concurrent.atomic.AtomicInteger();

        @Override
        public void stepAside() {
            asides.incrementAndGet();
            leading.set(false);
        }

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
        GateKeeper keeper = unstarted(Path.of("/proc"), posix);
        keeper.start(paths, election);
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

    /**
     * Lease mode, warden restarted beside its serving lilbee: until the election's first answer it neither fences
     * that lilbee (it may still hold the Lease) nor starts; once it leads, the lilbee is its pod's, never signalled.
     */
    @Test
    void inLeaseModeARestartedWardenKeepsItsServingLilbeeUntilTheElectionAnswers() throws Exception {
        Switch election = new Switch();
        election.decided.set(false);
        try (Peer lilbee = Peer.pythonHolder(paths.serverLock(), "pass", "/opt/lilbee/bin/lilbee", "serve")) {
            lilbee.awaitLine("locked", Duration.ofSeconds(10));
            GateKeeper keeper = leaseKeeper(election, new NativePosix());
            Await.until("its lilbee proven, the Lease asked about", () -> keeper.snapshot().server() instanceof ServerLockState.InPod
                    && keeper.snapshot().note().orElse("").contains("asking the API server whether the Lease warden-gate"));
            assertFalse(keeper.snapshot().started());
            assertTrue(lilbee.process().isAlive(), "not fenced while the election has not answered");
            election.leading.set(true);
            election.decided.set(true);
            Await.until("started and serving with the Lease", () -> keeper.snapshot().started() && keeper.snapshot().serving());
            assertTrue(lilbee.process().isAlive(), "kept, never fenced");
        }
    }

    /** Lease mode: a lilbee gone longer than handover-after makes its warden step aside from the Lease. */
    @Test
    void inLeaseModeALilbeeGoneTooLongStepsAsideFromTheLease() throws Exception {
        handoverAfter = Duration.ofMillis(500);
        Switch election = new Switch();
        election.leading.set(true);
        GateKeeper keeper = leaseKeeper(election, new NativePosix());
        Await.until("started with the Lease", () -> keeper.snapshot().started());
        try (Peer lilbee = Peer.flockHolder(paths.serverLock())) {
            Await.until("serving", () -> keeper.snapshot().serving());
        }
        Await.until("stepped aside", () -> election.asides.get() == 1);
        Await.until("not started", () -> !keeper.snapshot().started());
        assertTrue(Peer.flockCanTake(paths.gateLock()), "the gate lock let go");
    }

    /** Step-down: a decoy's lock listed first (and named lilbee serve) is no holder; the real one is fenced. */
    @Test
    void aSteppedDownWardenFencesEveryRealHolderAndNoDecoy() throws Exception {
        Switch election = new Switch();
        election.leading.set(true);
        GateKeeper keeper = leaseKeeper(election, new NativePosix());
        Await.until("started with the Lease", () -> keeper.snapshot().started());
        Files.writeString(paths.serverLock(), "");
        try (Peer decoy = Peer.pythonLock(paths.serverLock(), "posix-read", "/opt/lilbee/bin/lilbee", "serve");
                Peer lilbee = Peer.pythonLock(paths.serverLock(), "flock-exclusive");
                Peer shared = Peer.flockHolder(dir.resolve("unrelated.lock"))) {
            Await.until("serving", () -> keeper.snapshot().serving());
            election.leading.set(false);
            assertTrue(lilbee.process().waitFor(10, TimeUnit.SECONDS), "the real holder was fenced");
            assertEquals(143, lilbee.process().exitValue());
            Await.until("nothing left to fence", () -> keeper.snapshot().server() instanceof ServerLockState.NotInPod);
            assertTrue(decoy.process().isAlive(), "a POSIX lock proves nothing: never signalled");
            assertTrue(shared.process().isAlive());
            assertTrue(keeper.health(Duration.ofSeconds(30)).alive());
        }
    }

    /** A holder the fence may not signal turns liveness DOWN, naming it, until it is gone. */
    @Test
    void aHolderThatCannotBeFencedFailsLivenessNamingIt() throws Exception {
        dev.warden.lock.Posix refusing = new dev.warden.testing.DelegatingPosix(new NativePosix()) {
            @Override
            public boolean pidfdSignal(int pidfd, int signal, boolean group) throws ErrnoException {
                throw new ErrnoException("pidfd_send_signal", dev.warden.lock.Errno.EPERM, "Operation not permitted");
            }
        };
        Switch election = new Switch();
        try (Peer lilbee = Peer.pythonLock(paths.serverLock(), "flock-exclusive")) {
            GateKeeper keeper = leaseKeeper(election, refusing);
            Await.until("liveness DOWN", () -> !keeper.health(Duration.ofSeconds(30)).alive());
            String detail = keeper.health(Duration.ofSeconds(30)).detail();
            assertTrue(detail.contains("pid " + lilbee.pid()) && detail.contains("not permitted"), detail);
            lilbee.kill();
            Await.until("alive once it is gone", () -> keeper.health(Duration.ofSeconds(30)).alive());
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
