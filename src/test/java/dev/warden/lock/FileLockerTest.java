package dev.warden.lock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.Await;
import dev.warden.testing.KernelLocks;
import dev.warden.testing.DelegatingPosix;
import dev.warden.testing.Peer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FileLockerTest {

    @TempDir
    Path dir;

    private final FileLocker locker = new FileLocker(new NativePosix());

    @Test
    void aFreeLockIsTakenAndItsFileIsKeptAfterRelease() throws Exception {
        Path file = dir.resolve("server.lock");
        Optional<HeldLock> lock = locker.tryLock(file);
        assertTrue(lock.isPresent());
        lock.get().close();
        assertTrue(Files.exists(file), "the lock file must never be deleted on release");
        assertTrue(Peer.flockCanTake(file));
    }

    /**
     * A descriptor passed over a Unix socket (a supervisor giving the gate lock back) is held only when it is the file at
     * the path and its open file already holds the exclusive flock; a descriptor of a free file or another file is
     * closed, and no lock is taken through it (its sender could unlock a lock taken so).
     */
    @Test
    void adoptedOnlyAsTheOpenFileThatHoldsTheLockOnTheFileAtThePath() throws Exception {
        Path file = Files.writeString(dir.resolve("gate.lock"), "");
        Path other = Files.writeString(dir.resolve("other.lock"), "");
        NativePosix posix = new NativePosix();
        ProcFs procs = new SystemProcFs();
        String socket = dir.resolve("give.sock").toString();
        int listener = posix.listenUnix(socket, 4);
        Process sender = new ProcessBuilder("python3", "-c", String.join("\n",
                "import fcntl, socket, sys, time",
                "def give(path, lock):",
                "    f = open(path)",
                "    if lock:",
                "        fcntl.flock(f, fcntl.LOCK_EX)",
                "    s = socket.socket(socket.AF_UNIX)",
                "    s.connect(sys.argv[1])",
                "    socket.send_fds(s, [b'gate\\n'], [f.fileno()])",
                "    return f, s",
                "kept = [give(sys.argv[2], True), give(sys.argv[2], False), give(sys.argv[3], False)]",
                "time.sleep(30)"), socket, file.toString(), other.toString()).inheritIO().start();
        try {
            int[] given = new int[3];
            for (int i = 0; i < 3; i++) {
                int connection = accepted(posix, listener);
                given[i] = received(posix, connection);
                posix.close(connection);
            }
            Optional<HeldLock> held = locker.adopt(given[0], file, procs);
            assertTrue(held.isPresent(), "the open file that holds the lock");
            assertFalse(Peer.flockCanTake(file));
            sender.destroyForcibly().waitFor();
            assertFalse(Peer.flockCanTake(file), "held through the adopted descriptor once its sender is gone");
            held.get().close();
            assertTrue(Peer.flockCanTake(file));
            assertEquals(Optional.empty(), locker.adopt(given[1], file, procs), "a free file's descriptor: no lock taken");
            assertTrue(Peer.flockCanTake(file));
            assertEquals(Optional.empty(), locker.adopt(given[2], file, procs), "another file's");
        } finally {
            sender.destroyForcibly().waitFor();
            posix.close(listener);
        }
    }

    private static int accepted(Posix posix, int listener) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (System.nanoTime() < deadline) {
            int fd = posix.accept(listener);
            if (fd >= 0) {
                return fd;
            }
            Thread.sleep(10);
        }
        throw new AssertionError("no connection");
    }

    private static int received(Posix posix, int connection) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (System.nanoTime() < deadline) {
            Posix.Received got = posix.receive(connection, 64);
            if (got != null && got.fds().length == 1) {
                return got.fds()[0];
            }
            Thread.sleep(10);
        }
        throw new AssertionError("no descriptor");
    }

    @Test
    void releasingTwiceIsHarmless() throws Exception {
        Path file = dir.resolve("server.lock");
        HeldLock lock = locker.tryLock(file).orElseThrow();
        lock.close();
        lock.close();
        assertFalse(lock.isHeld());
        HeldLock again = locker.tryLock(file).orElseThrow();
        again.close();
    }

    @Test
    void aLockWardenHoldsRefusesUtilLinuxFlock() throws Exception {
        Path file = dir.resolve("server.lock");
        try (HeldLock lock = locker.tryLock(file).orElseThrow()) {
            assertFalse(Peer.flockCanTake(file), "flock -n must be refused while warden holds the lock");
        }
        assertTrue(Peer.flockCanTake(file), "flock -n must succeed once warden lets go");
    }

    @Test
    void aLockUtilLinuxFlockHoldsRefusesWarden() throws Exception {
        Path file = dir.resolve("server.lock");
        try (Peer holder = Peer.flockHolder(file)) {
            assertTrue(locker.tryLock(file).isEmpty());
            holder.kill();
            try (HeldLock lock = locker.tryLock(file).orElseThrow()) {
                assertTrue(lock.isHeld());
            }
        }
    }

    @Test
    void pythonFcntlFlockAndWardenRefuseEachOther() throws Exception {
        Peer.assumePython();
        Path file = dir.resolve("server.lock");
        try (Peer python = Peer.pythonHolder(file, "pass")) {
            python.awaitLine("locked", Duration.ofSeconds(10));
            assertTrue(locker.tryLock(file).isEmpty(), "a Python fcntl.flock holder must refuse warden");
        }
        try (HeldLock lock = locker.tryLock(file).orElseThrow()) {
            int rc = Peer.run(Duration.ofSeconds(10), "python3", "-c",
                    "import fcntl, os, sys\n"
                            + "fd = os.open(sys.argv[1], os.O_RDWR)\n"
                            + "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept BlockingIOError:\n    sys.exit(7)\n",
                    file.toString());
            assertEquals(7, rc, "Python's fcntl.flock must be refused while warden holds the lock");
        }
    }

    @Test
    void aWaitingLockIsTakenOnceTheHolderIsKilled() throws Exception {
        Path file = dir.resolve("server.lock");
        try (Peer holder = Peer.flockHolder(file)) {
            CompletableFuture<HeldLock> waiting = lockInBackground(file);
            assertFalse(waiting.isDone());
            holder.kill();
            try (HeldLock lock = waiting.get(20, TimeUnit.SECONDS)) {
                assertTrue(lock.isHeld());
                assertFalse(Peer.flockCanTake(file));
            }
        }
    }

    @Test
    void theLockIsNotInheritedByChildProcesses() throws Exception {
        try (HeldLock lock = locker.tryLock(dir.resolve("server.lock")).orElseThrow()) {
            List<String> fdinfo = Files.readAllLines(Path.of("/proc/self/fdinfo/" + lock.fd()));
            String flags = fdinfo.stream().filter(l -> l.startsWith("flags:")).findFirst().orElseThrow();
            int octal = Integer.parseInt(flags.substring("flags:".length()).trim(), 8);
            assertTrue((octal & 02000000) != 0, "lock files must be opened O_CLOEXEC, got flags " + flags);
        }
    }

    @Test
    void aLockFileReplacedWhileWardenWaitsDoesNotMakeTwoHolders() throws Exception {
        // filelock 3.21-3.29 unlinked the file on release: the waiter then wakes on a file no one else sees.
        Path file = dir.resolve("server.lock");
        Peer first = Peer.flockHolder(file);
        CompletableFuture<HeldLock> waiting = lockInBackground(file);
        // warden blocks on the first inode; the file is then replaced and a second peer holds the new one.
        Await.until("warden waits on the first lock file", () -> KernelLocks.blockedWaiters(file) > 0);
        Files.delete(file);
        try (Peer second = Peer.flockHolder(file)) {
            long retriesBefore = locker.replacedFileRetries();
            first.kill();
            Await.until("warden wakes on the first file",
                    () -> locker.replacedFileRetries() > retriesBefore || waiting.isDone());
            assertFalse(waiting.isDone(), "warden must not hold an unlinked file while a peer holds the real one");
            second.kill();
            try (HeldLock lock = waiting.get(20, TimeUnit.SECONDS)) {
                assertTrue(lock.stillAtPath());
                assertFalse(Peer.flockCanTake(file));
            }
        } finally {
            first.kill();
        }
    }

    @Test
    void aLockHeldWhenItsFileIsReplacedKnowsItIsNoLongerAtThePath() throws Exception {
        Path file = dir.resolve("server.lock");
        try (HeldLock lock = locker.tryLock(file).orElseThrow()) {
            assertTrue(lock.stillAtPath());
            Files.delete(file);
            Files.createFile(file);
            assertFalse(lock.stillAtPath());
        }
    }

    @Test
    void awaitingAReleaseEndsWhenTheHolderDiesAndNeverCreatesOrKeepsTheLock() throws Exception {
        Path file = dir.resolve("user.lock");
        locker.awaitRelease(file);
        assertFalse(Files.exists(file), "waiting on a user's lock must never create it");
        try (Peer holder = Peer.flockHolder(file)) {
            CompletableFuture<Void> released = new CompletableFuture<>();
            Thread.ofPlatform().daemon().start(() -> {
                try {
                    locker.awaitRelease(file);
                    released.complete(null);
                } catch (LockException e) {
                    released.completeExceptionally(e);
                }
            });
            Await.until("the watcher waits in the kernel", () -> KernelLocks.blockedWaiters(file) > 0);
            assertFalse(released.isDone());
            holder.kill();
            released.get(20, TimeUnit.SECONDS);
            assertTrue(Peer.flockCanTake(file), "the watcher lets go at once");
        }
    }

    @Test
    void probeLooksWithoutCreatingTheFile() throws Exception {
        Path file = dir.resolve("server.lock");
        assertEquals(LockProbe.ABSENT, locker.probe(file));
        assertFalse(Files.exists(file));
        Files.createFile(file);
        assertEquals(LockProbe.FREE, locker.probe(file));
        try (Peer holder = Peer.flockHolder(file)) {
            assertEquals(LockProbe.HELD, locker.probe(file));
        }
    }

    @Test
    void aDirectoryInPlaceOfTheLockFileIsNamedInTheError() throws Exception {
        Path file = Files.createDirectory(dir.resolve("server.lock"));
        LockException e = assertThrows(LockException.class, () -> locker.tryLock(file));
        assertTrue(e.getMessage().contains(file + " is a directory"), e.getMessage());
    }

    @Test
    void aSymbolicLinkInPlaceOfTheLockFileIsRefused() throws Exception {
        Path target = Files.createFile(dir.resolve("elsewhere"));
        Path file = Files.createSymbolicLink(dir.resolve("server.lock"), target);
        LockException e = assertThrows(LockException.class, () -> locker.tryLock(file));
        assertTrue(e.getMessage().contains(file + " or a directory on its way is a symbolic link"), e.getMessage());
    }

    @Test
    void aFifoInPlaceOfTheLockFileIsRefusedWithoutBlocking() throws Exception {
        Path file = dir.resolve("server.lock");
        dev.warden.testing.Swapper.mkfifo(file);
        LockException e = assertTimeoutPreemptively(java.time.Duration.ofSeconds(20),
                () -> assertThrows(LockException.class, () -> locker.lock(file)));
        assertTrue(e.getMessage().contains(file + " is a FIFO, not a regular file. Remove it"), e.getMessage());
    }

    @Test
    void aDataDirSwappedForALinkAfterStartIsNotFollowed() throws Exception {
        Path elsewhere = Files.createDirectories(dir.resolve("elsewhere"));
        Path data = dir.resolve("data");
        Files.createSymbolicLink(data, elsewhere);
        Files.createDirectory(elsewhere.resolve("sub"));
        // warden resolved <dir>/data/sub at start; "data" is a link now, so nothing is created through it
        LockException e = assertThrows(LockException.class, () -> locker.tryLock(data.resolve("sub/server.lock")));
        assertTrue(e.getMessage().contains("a directory on its way is a symbolic link"), e.getMessage());
        assertFalse(Files.exists(elsewhere.resolve("sub/server.lock")));
    }

    @Test
    void aMissingDirectoryIsNamedWithTheFix() {
        Path file = dir.resolve("missing/server.lock");
        LockException e = assertThrows(LockException.class, () -> locker.tryLock(file));
        assertTrue(e.getMessage().contains("the directory " + dir.resolve("missing") + " does not exist"), e.getMessage());
    }

    @Test
    void aFilesystemWithoutLockSupportIsNamed() {
        LockException e = assertThrows(LockException.class,
                () -> new FileLocker(failingFlock(Errno.ENOLCK)).tryLock(dir.resolve("server.lock")));
        assertTrue(e.getMessage().startsWith(dir + " is on a filesystem that does not support file locking"),
                e.getMessage());
    }

    /** The start's check refuses only a filesystem that cannot lock at all; a holder or a passing failure is no refusal. */
    @Test
    void requireLockingRefusesOnlyAFilesystemThatCannotLock() throws Exception {
        Path file = dir.resolve("data/server.lock");
        for (int errno : new int[] {Errno.ENOLCK, Errno.ENOSYS}) {
            LockException e = assertThrows(LockException.class, () -> new FileLocker(failingFlock(errno)).requireLocking(file));
            assertTrue(e.noLocking(), e.getMessage());
            assertTrue(e.getMessage().startsWith(dir.resolve("data") + " is on a filesystem that does not support file locking."
                    + " Move it to a local disk."), e.getMessage());
        }
        new FileLocker(failingFlock(Errno.EINVAL)).requireLocking(file);
        try (Peer holder = Peer.flockHolder(file)) {
            locker.requireLocking(file);
            assertFalse(Peer.flockCanTake(file), "the holder keeps its lock");
        }
        locker.requireLocking(file);
        assertTrue(Peer.flockCanTake(file), "the check let go of the lock it took");
    }

    @Test
    void aFilesystemWithoutFlockIsRefusedNotFallenBackFrom() {
        LockException e = assertThrows(LockException.class,
                () -> new FileLocker(failingFlock(Errno.ENOSYS)).tryLock(dir.resolve("server.lock")));
        assertTrue(e.getMessage().contains("without flock(2)"), e.getMessage());
        assertTrue(e.getMessage().contains("will not fall back to a marker file"), e.getMessage());
    }

    @Test
    void anUnexpectedFlockErrorNamesThePathAndTheErrno() {
        LockException e = assertThrows(LockException.class,
                () -> new FileLocker(failingFlock(5)).tryLock(dir.resolve("server.lock")));
        assertTrue(e.getMessage().startsWith("Cannot lock " + dir.resolve("server.lock")), e.getMessage());
        assertTrue(e.getMessage().contains("errno 5"), e.getMessage());
    }

    @Test
    void contentionErrnosMeanAnotherHolder() throws Exception {
        assertTrue(new FileLocker(failingFlock(Errno.EWOULDBLOCK)).tryLock(dir.resolve("a.lock")).isEmpty());
        assertTrue(new FileLocker(failingFlock(Errno.EACCES)).tryLock(dir.resolve("b.lock")).isEmpty());
    }

    @Test
    void aPermissionProblemNamesTheDirectoryAndTheFix() {
        LockException e = assertThrows(LockException.class,
                () -> new FileLocker(failingOpen(Errno.EACCES)).tryLock(dir.resolve("server.lock")));
        assertTrue(e.getMessage().contains("permission denied for uid"), e.getMessage());
        assertTrue(e.getMessage().contains("Give warden write access to " + dir), e.getMessage());
    }

    /**
     * Another user's lock file, made 0644 as filelock makes it: warden may not open it for writing, and
     * locks it through a read-only descriptor (a refusal would count a live user's lock as no lock).
     */
    @Test
    void aLockFileWardenMayOnlyReadIsStillLockedAndProbed() throws Exception {
        Path file = Files.writeString(dir.resolve("user.lock"), "");
        Posix readOnly = new DelegatingPosix(new NativePosix()) {
            @Override
            public int openAt(int dirFd, String name, Open how) throws ErrnoException {
                if (how == Open.READ_WRITE_CREATE) {
                    throw new ErrnoException("open(" + name + ")", Errno.EACCES, "injected");
                }
                return super.openAt(dirFd, name, how);
            }
        };
        FileLocker locker = new FileLocker(readOnly);
        try (HeldLock lock = locker.tryLock(file).orElseThrow()) {
            assertFalse(Peer.flockCanTake(file), "flock -n must be refused while warden holds it read-only");
        }
        try (Peer holder = Peer.flockHolder(file)) {
            assertEquals(LockProbe.HELD, locker.probe(file));
            assertTrue(locker.tryLock(file).isEmpty());
        }
        assertEquals(LockProbe.FREE, locker.probe(file));
    }

    @Test
    void aReadOnlyVolumeIsNamed() {
        LockException e = assertThrows(LockException.class,
                () -> new FileLocker(failingOpen(Errno.EROFS)).tryLock(dir.resolve("server.lock")));
        assertTrue(e.getMessage().contains(dir + " is on a read-only filesystem"), e.getMessage());
    }

    @Test
    void aFileThatIsDeletedAgainAndAgainIsNamedRatherThanSpunOn() {
        // stat never finds the file just locked: as if a process deleted the lock file in a loop.
        Posix deleted = new DelegatingPosix(new NativePosix()) {
            @Override
            public FileStat statAt(int dirFd, String name) throws ErrnoException {
                throw new ErrnoException("stat(" + name + ")", Errno.ENOENT, "injected");
            }
        };
        Path lock = dir.resolve("server.lock");
        LockException e = assertThrows(LockException.class, () -> new FileLocker(deleted).lock(lock));
        assertTrue(e.getMessage().contains(lock + " was replaced 1000 times in a row"), e.getMessage());
        assertTrue(e.getMessage().contains("Something keeps deleting it"), e.getMessage());
    }

    /** The real libc, except that flock fails with {@code errno}. */
    private static Posix failingFlock(int errno) {
        return new DelegatingPosix(new NativePosix()) {
            @Override
            public void lockExclusive(int fd, boolean wait) throws ErrnoException {
                throw new ErrnoException("flock", errno, "injected");
            }
        };
    }

    private static Posix failingOpen(int errno) {
        return new DelegatingPosix(new NativePosix()) {
            @Override
            public int openAt(int dirFd, String name, Open how) throws ErrnoException {
                if (how == Open.DIRECTORY) {
                    return super.openAt(dirFd, name, how);
                }
                throw new ErrnoException("open(" + name + ")", errno, "injected");
            }
        };
    }

    /** A blocking lock on a thread of its own, as the lock keeper waits. */
    private CompletableFuture<HeldLock> lockInBackground(Path file) {
        CompletableFuture<HeldLock> waiting = new CompletableFuture<>();
        Thread.ofPlatform().daemon().start(() -> {
            try {
                waiting.complete(locker.lock(file));
            } catch (LockException | RuntimeException e) {
                waiting.completeExceptionally(e);
            }
        });
        return waiting;
    }
}
