package dev.warden.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.engine.EngineDir;
import dev.warden.engine.EngineUsers;
import dev.warden.library.LibraryLocks;
import dev.warden.library.LibraryUnlockableException;
import dev.warden.library.LockTimeoutException;
import dev.warden.library.ResetRefusedException;
import dev.warden.lock.FileLocker;
import dev.warden.lock.NativePosix;
import dev.warden.lock.SyncMark;
import dev.warden.testing.Await;
import dev.warden.testing.Peer;
import dev.warden.testing.WardenProcess;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code warden exec}: the packaged warden holding lilbee's locks around a real command. */
class ExecIT {

    @TempDir
    Path root;

    private final LibraryLocks library = new LibraryLocks(new FileLocker(new NativePosix()), new SyncMark());

    /** warden exec in the background, its stdout read line by line. */
    private static final class Running implements AutoCloseable {
        final Process process;
        final BufferedReader out;

        private final java.util.concurrent.BlockingQueue<String> lines = new java.util.concurrent.LinkedBlockingQueue<>();

        Running(String... args) throws Exception {
            List<String> command = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElse("java"),
                    "-jar", System.getProperty("warden.it.jar", "target/quarkus-app/quarkus-run.jar"), "exec"));
            command.addAll(List.of(args));
            process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            out = new BufferedReader(new InputStreamReader(process.getInputStream()));
            Thread.ofPlatform().daemon().start(() -> {
                try {
                    String line;
                    while ((line = out.readLine()) != null) {
                        lines.add(line);
                    }
                } catch (java.io.IOException e) {
                    // the stream closed
                }
            });
        }

        /** Waits for a line of the command's output; gives up (never hangs) after the usual patience. */
        void awaitLine(String expected) throws Exception {
            long deadline = System.nanoTime() + Await.PATIENCE.toNanos();
            while (System.nanoTime() < deadline) {
                String line = lines.poll(50, TimeUnit.MILLISECONDS);
                if (expected.equals(line)) {
                    return;
                }
            }
            throw new AssertionError("exec never printed " + expected);
        }

        int exitCode() throws InterruptedException {
            assertTrue(process.waitFor(30, TimeUnit.SECONDS), "warden exec did not end");
            return process.exitValue();
        }

        @Override
        public void close() {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
            commands.forEach(ProcessHandle::destroyForcibly);
        }

        /** The command's processes, noted while they are still warden's children, to end them even if warden dies first. */
        private final List<ProcessHandle> commands = new ArrayList<>();

        void noteCommand() {
            commands.addAll(process.descendants().toList());
        }
    }

    @Test
    void theCommandRunsUnderTheLocksAndItsExitCodePassesThrough() throws Exception {
        Path data = root.resolve("data");
        WardenProcess.Result result = WardenProcess.run("exec", "--hold", "data-dir,write", "--data-root", root.toString(), "--",
                "sh", "-c", "flock -n " + data.resolve("server.lock") + " true; echo data-dir=$?;"
                        + " flock -n " + data.resolve("lancedb/.lock") + " true; echo write=$?; exit 7");
        assertEquals(7, result.exitCode(), result.stderr());
        assertTrue(result.stdout().contains("data-dir=1"), result.stdout());
        assertTrue(result.stdout().contains("write=1"), result.stdout());
        assertTrue(Peer.flockCanTake(data.resolve("server.lock")), "released when the command ends");
        assertTrue(Peer.flockCanTake(data.resolve("lancedb/.lock")));
    }

    @Test
    void aHeldLockEndsExecWithThreeNamingTheHolder() throws Exception {
        Path lock = Files.createDirectories(root.resolve("data")).resolve("server.lock");
        try (Peer holder = Peer.flockHolder(lock)) {
            WardenProcess.Result result = WardenProcess.run("exec", "--hold", "data-dir", "--wait", "200ms",
                    "--data-root", root.toString(), "--", "sh", "-c", "echo ran");
            assertEquals(3, result.exitCode());
            assertFalse(result.stdout().contains("ran"), "the command must not run without its lock");
            assertTrue(result.stderr().contains("held by pid " + holder.pid()), result.stderr());
        }
    }

    @Test
    void aResetIsRefusedWhileAPythonSyncRuns() throws Exception {
        library.syncRunning(root, Duration.ofSeconds(1)).close();
        try (Peer sync = Peer.pythonSqlite(root.resolve("sync.lock"), "read", 0)) {
            sync.awaitLine("locked", Duration.ofSeconds(20));
            WardenProcess.Result result = WardenProcess.run("exec", "--hold", "reset", "--data-root", root.toString(),
                    "--", "true");
            assertEquals(3, result.exitCode());
            assertTrue(result.stderr().contains("A sync, an import, an add or a wiki build is running on this library."), result.stderr());
        }
    }

    @Test
    void eachMarkHeldByExecIsSeenByAnotherJavaProcess() throws Exception {
        try (Running sync = new Running("--hold", "sync", "--data-root", root.toString(), "--", "sh", "-c", "echo held; exec sleep 600")) {
            sync.awaitLine("held");
            assertThrows(ResetRefusedException.class, () -> library.noSyncRunning(root));
        }
        try (Running reset = new Running("--hold", "reset", "--data-root", root.toString(), "--", "sh", "-c", "echo held; exec sleep 600")) {
            reset.awaitLine("held");
            assertThrows(LockTimeoutException.class, () -> library.syncRunning(root, Duration.ofMillis(200)));
        }
        try (Running write = new Running("--hold", "write", "--data-root", root.toString(), "--", "sh", "-c", "echo held; exec sleep 600")) {
            write.awaitLine("held");
            LockTimeoutException e = org.junit.jupiter.api.Assertions.assertThrows(LockTimeoutException.class,
                    () -> library.writeLock(root.resolve("data/lancedb"), Duration.ofMillis(200)));
            assertTrue(e.getMessage().startsWith("Timed out waiting for exclusive file lock"), e.getMessage());
        }
        Await.until("the reset's mark is released with its process", () -> {
            try {
                library.syncRunning(root, Duration.ofMillis(100)).close();
                return true;
            } catch (LockTimeoutException e) {
                return false;
            } catch (LibraryUnlockableException e) {
                throw new AssertionError(e);
            }
        });
    }

    @Test
    void anEngineUserHeldByExecKeepsTheReaperAway() throws Exception {
        Path engine = root.resolve("engine");
        try (Running user = new Running("--hold", "engine-user", "--engine-dir", engine.toString(), "--",
                "sh", "-c", "echo held; exec sleep 600")) {
            user.awaitLine("held");
            assertTrue(new EngineUsers(new FileLocker(new NativePosix())).anyLive(new EngineDir(engine)));
            // Started with this JVM's umask (022 here): warden clears its group-write bit, so what it creates
            // on the volume is writable by the pod's fsGroup (lilbee of another UID adds its lock there).
            org.junit.jupiter.api.Assumptions.assumeTrue(Files.readAllLines(Path.of("/proc/self/status")).contains("Umask:\t0022"),
                    "SKIPPED: the group-write check needs the usual umask 022");
            assertEquals(0775, (Integer) Files.getAttribute(engine.resolve("engine-users"), "unix:mode") & 0777);
            try (var locks = Files.list(engine.resolve("engine-users"))) {
                for (Path lock : locks.toList()) {
                    assertEquals(0664, (Integer) Files.getAttribute(lock, "unix:mode") & 0777, lock.toString());
                }
            }
        }
    }

    @Test
    void sigtermIsPassedOnAndTheCommandsExitCodeComesBack() throws Exception {
        Path data = root.resolve("data");
        try (Running exec = new Running("--hold", "data-dir", "--data-root", root.toString(), "--",
                "sh", "-c", "trap 'echo got-term; exit 5' TERM; echo started; while :; do sleep 0.05; done")) {
            exec.awaitLine("started");
            exec.noteCommand();
            assertFalse(Peer.flockCanTake(data.resolve("server.lock")));
            // Process.destroy() would also close our end of its stdout; send the signal alone.
            new NativePosix().kill(exec.process.pid(), 15);
            exec.awaitLine("got-term");
            assertEquals(5, exec.exitCode());
            assertTrue(Peer.flockCanTake(data.resolve("server.lock")));
        }
    }

    @Test
    void aKilledCommandReleasesTheLocksAndReportsTheSignal() throws Exception {
        WardenProcess.Result result = WardenProcess.run("exec", "--hold", "write", "--data-root", root.toString(), "--",
                "sh", "-c", "kill -9 $$");
        assertEquals(137, result.exitCode());
        assertTrue(Peer.flockCanTake(root.resolve("data/lancedb/.lock")));
    }

    @Test
    void whenWardenIsKilledTheKernelFreesItsLocks() throws Exception {
        try (Running exec = new Running("--hold", "data-dir", "--data-root", root.toString(), "--",
                "sh", "-c", "echo started; exec sleep 600")) {
            exec.awaitLine("started");
            assertFalse(Peer.flockCanTake(root.resolve("data/server.lock")));
            // The command outlives warden; note it now, while it is still warden's child, to end it after.
            List<ProcessHandle> command = exec.process.descendants().toList();
            try {
                exec.process.destroyForcibly();
                exec.process.waitFor();
                assertTrue(command.stream().anyMatch(ProcessHandle::isAlive), "the command outlives warden");
                assertTrue(Peer.flockCanTake(root.resolve("data/server.lock")),
                        "the command that outlives warden must not keep the lock (O_CLOEXEC)");
            } finally {
                command.forEach(ProcessHandle::destroyForcibly);
            }
        }
    }

    @Test
    void syncAndResetTogetherIsAUsageError() throws Exception {
        WardenProcess.Result result = WardenProcess.run("exec", "--hold", "sync,reset", "--", "true");
        assertEquals(2, result.exitCode());
        assertTrue(result.stderr().contains("sync (or backup) and reset exclude each other"), result.stderr());
    }

    private static void assertThrows(Class<? extends Throwable> type, org.junit.jupiter.api.function.Executable run) {
        org.junit.jupiter.api.Assertions.assertThrows(type, run);
    }
}
