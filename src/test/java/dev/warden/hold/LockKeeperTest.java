package dev.warden.hold;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.warden.config.LilbeePaths;
import dev.warden.keeper.KeeperPhase;
import dev.warden.lock.FileLocker;
import dev.warden.lock.LockException;
import dev.warden.lock.NativePosix;
import dev.warden.lock.ProcLocks;
import dev.warden.testing.Await;
import dev.warden.testing.KernelLocks;
import dev.warden.testing.Peer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LockKeeperTest {

    @TempDir
    Path dir;

    private final LockKeeper keeper = new LockKeeper(new FileLocker(new NativePosix()), new ProcLocks(),
            new ScopeOwnerFile(new ObjectMapper()), InstantSource.system(), Duration.ofMillis(50), Duration.ofMillis(100));

    @AfterEach
    void stopKeeper() {
        keeper.stop();
    }

    private LilbeePaths paths(String root, boolean scoped) {
        return new LilbeePaths(dir.resolve(root), dir.resolve(root).resolve("data"),
                dir.resolve(root).resolve("data/lancedb"), scoped ? Optional.of(dir.resolve("scope")) : Optional.empty(), "test");
    }

    @Test
    void takesTheScopeThenTheDataDirAndNamesItselfInTheOwnerFile() throws Exception {
        LilbeePaths paths = paths("a", true);
        assertTrue(keeper.start(paths, true).isEmpty());
        Await.until("both locks are held", () -> keeper.snapshot().allHeld());
        assertEquals(List.of(LockKind.SCOPE, LockKind.DATA_DIR),
                keeper.snapshot().locks().stream().map(LockStatus::kind).toList());
        assertFalse(Peer.flockCanTake(paths.serverLock()));
        assertFalse(Peer.flockCanTake(paths.scopeLock().orElseThrow()));
        ScopeOwner owner = new ScopeOwnerFile(new ObjectMapper()).read(paths.scopeOwner().orElseThrow());
        assertEquals(Optional.of(dir.resolve("a/data").toRealPath().toString()), owner.dataDir());
        assertEquals(ProcessHandle.current().pid(), owner.pid().orElseThrow());
        assertTrue(keeper.snapshot().everHeldAll());
    }

    /** The metrics hear which locks a start holds: no scope lock without a scope, so no series for one. */
    @Test
    void eachStartTellsWhichKindsOfLockItHolds() throws Exception {
        List<java.util.Set<LockKind>> planned = new java.util.concurrent.CopyOnWriteArrayList<>();
        keeper.onPlanned((watched, kinds) -> planned.add(kinds));
        assertTrue(keeper.start(paths("plain", false), true).isEmpty());
        keeper.stop();
        LockKeeper scoped = new LockKeeper(new FileLocker(new NativePosix()), new ProcLocks(),
                new ScopeOwnerFile(new ObjectMapper()), InstantSource.system(), Duration.ofMillis(50), Duration.ofMillis(100));
        scoped.onPlanned((watched, kinds) -> planned.add(kinds));
        try {
            assertTrue(scoped.start(paths("scoped", true), true).isEmpty());
        } finally {
            scoped.stop();
        }
        assertEquals(List.of(java.util.Set.of(LockKind.DATA_DIR), java.util.Set.of(LockKind.SCOPE, LockKind.DATA_DIR)), planned);
    }

    /**
     * A takeover of scope and data dir (lilbee with a scope dies) takes the data-dir lock before the
     * owner file's write, so the write does not stand between the holder's death and readiness.
     */
    @Test
    void aScopedTakeoverTakesTheDataDirBeforeWritingTheOwnerFile() throws Exception {
        LilbeePaths paths = paths("o", true);
        Files.createDirectories(paths.dataDir());
        Files.createDirectories(paths.scopeDir().orElseThrow());
        FileLocker probe = new FileLocker(new NativePosix());
        List<dev.warden.lock.LockProbe> dataDirAtWrite = new java.util.concurrent.CopyOnWriteArrayList<>();
        ScopeOwnerFile recording = new ScopeOwnerFile(new ObjectMapper()) {
            @Override
            public void write(Path ownerFile, Path dataDir, long pid) throws java.io.IOException {
                try {
                    dataDirAtWrite.add(probe.probe(paths.serverLock()));
                } catch (LockException e) {
                    throw new java.io.IOException(e);
                }
                super.write(ownerFile, dataDir, pid);
            }
        };
        LockKeeper scoped = new LockKeeper(new FileLocker(new NativePosix()), new ProcLocks(), recording,
                InstantSource.system(), Duration.ofMillis(50), Duration.ofMillis(100));
        try (Peer holder = Peer.flockHolder(paths.scopeLock().orElseThrow(), paths.serverLock())) {
            scoped.start(paths, true);
            Await.until("warden stands by on the scope", () -> scoped.snapshot().lock(LockKind.SCOPE)
                    .map(l -> l.state() instanceof LockState.HeldElsewhere).orElse(false));
            holder.kill();
            Await.until("the standby holds both locks", () -> scoped.snapshot().allHeld());
            Await.until("the owner file is written", () -> !dataDirAtWrite.isEmpty());
            assertEquals(List.of(dev.warden.lock.LockProbe.HELD), dataDirAtWrite,
                    "the data-dir lock was already warden's when the owner file was written");
            assertTrue(Files.exists(paths.scopeOwner().orElseThrow()));
        } finally {
            scoped.stop();
        }
    }

    /** A keeper that dies of an Error (say, out of memory) is not a stopped one: liveness must say so. */
    @Test
    void aKeeperThatDiesTurnsLivenessDownWhereAStoppedOneDoesNot() throws Exception {
        LilbeePaths paths = paths("dies", true);
        Files.createDirectories(paths.scopeDir().orElseThrow());
        ScopeOwnerFile dying = new ScopeOwnerFile(new ObjectMapper()) {
            @Override
            public ScopeOwner read(Path ownerFile) {
                throw new OutOfMemoryError("an owner file too large to read");
            }
        };
        LockKeeper doomed = new LockKeeper(new FileLocker(new NativePosix()), new ProcLocks(), dying,
                InstantSource.system(), Duration.ofMillis(50), Duration.ofMillis(100));
        try (Peer holder = Peer.flockHolder(paths.scopeLock().orElseThrow())) {
            doomed.start(paths, true);
            Await.until("the keeper's thread has died", () -> !doomed.health(Duration.ofSeconds(30)).alive());
            assertTrue(doomed.health(Duration.ofSeconds(30)).detail().contains("died"));
        } finally {
            doomed.stop();
        }
        keeper.start(paths("stopped", false), true);
        keeper.stop();
        assertTrue(keeper.health(Duration.ofSeconds(30)).alive(), "a keeper warden stopped is not a dead one");
    }

    @Test
    void aStandbyTakesOverTheMomentTheHolderDies() throws Exception {
        LilbeePaths paths = paths("a", false);
        Files.createDirectories(paths.dataDir());
        try (Peer holder = Peer.flockHolder(paths.serverLock())) {
            keeper.start(paths, true);
            Await.until("warden sees the lock held elsewhere", () -> stateOf(LockKind.DATA_DIR) instanceof LockState.HeldElsewhere);
            LockState.HeldElsewhere elsewhere = (LockState.HeldElsewhere) stateOf(LockKind.DATA_DIR);
            assertEquals(holder.pid(), elsewhere.holderPid().orElseThrow());
            assertFalse(keeper.snapshot().allHeld());
            assertFalse(keeper.snapshot().everHeldAll());
            holder.kill();
            Await.until("the standby holds the lock", () -> keeper.snapshot().allHeld());
            assertFalse(Peer.flockCanTake(paths.serverLock()));
        }
    }

    @Test
    void theDataDirIsNotTakenWhileAnotherProcessHoldsTheScope() throws Exception {
        LilbeePaths paths = paths("b", true);
        Files.createDirectories(paths.scopeDir().orElseThrow());
        new ScopeOwnerFile(new ObjectMapper()).write(paths.scopeOwner().orElseThrow(), Path.of("/data/other"), 777);
        try (Peer holder = Peer.flockHolder(paths.scopeLock().orElseThrow())) {
            keeper.start(paths, true);
            Await.until("warden sees the scope held elsewhere", () -> stateOf(LockKind.SCOPE) instanceof LockState.HeldElsewhere);
            LockState.HeldElsewhere scope = (LockState.HeldElsewhere) stateOf(LockKind.SCOPE);
            assertEquals(Optional.of("/data/other"), scope.owner().dataDir());
            assertEquals(777, scope.owner().pid().orElseThrow());
            assertInstanceOf(LockState.Waiting.class, stateOf(LockKind.DATA_DIR));
            assertTrue(Peer.flockCanTake(paths.serverLock()), "the data-dir lock must wait for the scope");
        }
        Await.until("warden holds both once the scope is free", () -> keeper.snapshot().allHeld());
    }

    @Test
    void stoppingRemovesTheOwnerFileBeforeTheScopeIsFree() throws Exception {
        LilbeePaths paths = paths("a", true);
        keeper.start(paths, true);
        Await.until("both locks are held", () -> keeper.snapshot().allHeld());
        Path owner = paths.scopeOwner().orElseThrow();
        Path scopeLock = paths.scopeLock().orElseThrow().toRealPath();
        // A peer blocked on the scope reports whether the owner file still exists when it wins.
        try (Peer waiter = Peer.pythonHolder(scopeLock,
                "import os; print('owner-file-present' if os.path.exists(" + pyString(owner.toString()) + ") else 'owner-file-gone', flush=True)")) {
            Await.until("the peer waits on the scope", () -> KernelLocks.blockedWaiters() > 0);
            keeper.stop();
            List<String> lines = waiter.awaitLine("owner-file-gone", Duration.ofSeconds(20));
            assertFalse(lines.contains("owner-file-present"), lines.toString());
        }
        assertFalse(Files.exists(owner));
        assertTrue(Peer.flockCanTake(paths.serverLock()));
        assertEquals(KeeperPhase.STOPPED, keeper.snapshot().phase());
    }

    @Test
    void noWaitRefusesNamingTheHolderAndHoldsNothing() throws Exception {
        LilbeePaths paths = paths("c", true);
        Files.createDirectories(paths.dataDir());
        try (Peer holder = Peer.flockHolder(paths.serverLock())) {
            Optional<Refusal> refusal = keeper.start(paths, false);
            assertTrue(refusal.isPresent());
            assertEquals(LockKind.DATA_DIR, refusal.get().kind());
            assertTrue(refusal.get().message().contains("(process " + holder.pid() + ")"), refusal.get().message());
            assertTrue(Peer.flockCanTake(paths.scopeLock().orElseThrow()), "the scope taken first must be let go");
            assertFalse(Files.exists(paths.scopeOwner().orElseThrow()), "no owner file may outlive the refusal");
        }
    }

    @Test
    void noWaitRefusedByTheScopeNamesTheServerThatHoldsIt() throws Exception {
        LilbeePaths paths = paths("d", true);
        Files.createDirectories(paths.scopeDir().orElseThrow());
        new ScopeOwnerFile(new ObjectMapper()).write(paths.scopeOwner().orElseThrow(), Path.of("/data/first"), 99);
        try (Peer holder = Peer.flockHolder(paths.scopeLock().orElseThrow())) {
            Refusal refusal = keeper.start(paths, false).orElseThrow();
            assertEquals(LockKind.SCOPE, refusal.kind());
            assertTrue(refusal.message().contains("served by the server of /data/first (pid 99)"), refusal.message());
        }
    }

    @Test
    void aLockFileDeletedWhileHeldIsTakenAgain() throws Exception {
        LilbeePaths paths = paths("e", false);
        keeper.start(paths, true);
        Await.until("the lock is held", () -> keeper.snapshot().allHeld());
        Files.delete(paths.serverLock());
        Await.until("warden holds the new lock file", () -> Files.exists(paths.serverLock()) && !canTake(paths.serverLock()));
        Await.until("the lock is held again", () -> keeper.snapshot().allHeld());
    }

    @Test
    void aLockThatCannotBeTakenIsReportedAndRetriedWithoutStoppingTheKeeper() throws Exception {
        LilbeePaths paths = paths("f", false);
        Files.createDirectories(paths.serverLock());
        keeper.start(paths, true);
        Await.until("the error is published", () -> stateOf(LockKind.DATA_DIR) instanceof LockState.Failed);
        LockState.Failed failed = (LockState.Failed) stateOf(LockKind.DATA_DIR);
        assertTrue(failed.message().contains("is a directory"), failed.message());
        assertTrue(keeper.health(Duration.ofSeconds(30)).alive());
        Files.delete(paths.serverLock());
        Await.until("the lock is held once the directory is gone", () -> keeper.snapshot().allHeld());
    }

    @Test
    void noWaitReportsALockThatCannotBeTakenAsAnError() throws Exception {
        LilbeePaths paths = paths("g", false);
        Files.createDirectories(paths.serverLock());
        LockException e = assertThrows(LockException.class, () -> keeper.start(paths, false));
        assertTrue(e.getMessage().contains("is a directory"), e.getMessage());
    }

    @Test
    void aDataDirThatCannotBeCreatedIsReported() throws Exception {
        Files.writeString(dir.resolve("h"), "a file where the data root should be");
        LilbeePaths paths = paths("h", false);
        keeper.start(paths, true);
        Await.until("the error is published", () -> stateOf(LockKind.DATA_DIR) instanceof LockState.Failed);
        LockState.Failed failed = (LockState.Failed) stateOf(LockKind.DATA_DIR);
        assertTrue(failed.message().startsWith("Cannot create " + paths.dataDir()), failed.message());
    }

    @Test
    void theKeeperCannotBeStartedTwice() throws Exception {
        keeper.start(paths("i", false), true);
        assertThrows(IllegalStateException.class, () -> keeper.start(paths("i", false), true));
    }

    @Test
    void livenessIsUpWhileAStandbyWaits() throws Exception {
        LilbeePaths paths = paths("j", false);
        Files.createDirectories(paths.dataDir());
        try (Peer holder = Peer.flockHolder(paths.serverLock())) {
            keeper.start(paths, true);
            Await.until("warden stands by", () -> stateOf(LockKind.DATA_DIR) instanceof LockState.HeldElsewhere);
            assertTrue(keeper.health(Duration.ofSeconds(30)).alive());
            assertFalse(keeper.health(Duration.ofNanos(-1)).alive(), "a keeper past its stall timeout is wedged");
        }
    }

    private LockState stateOf(LockKind kind) {
        return keeper.snapshot().lock(kind).map(LockStatus::state).orElse(null);
    }

    private static boolean canTake(Path file) {
        try {
            return Peer.flockCanTake(file);
        } catch (Exception e) {
            return false;
        }
    }


    private static String pyString(String s) {
        return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'";
    }
}
