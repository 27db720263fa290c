package dev.warden.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.lock.Errno;
import dev.warden.lock.FileLocker;
import dev.warden.lock.NativePosix;
import dev.warden.lock.Posix;
import dev.warden.testing.DelegatingPosix;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

class SignallerTest {

    private static final Duration SHORT = Duration.ofSeconds(5);

    private final ProcessTable processes = new ProcessTable();
    private final Signaller signaller = new Signaller(new NativePosix(), processes);

    /** A kernel before 5.3: pidfd_open is ENOSYS, and each kill(2) checks the start time right before. */
    private final Signaller withoutPidfd = new Signaller(new DelegatingPosix(new NativePosix()) {
        @Override
        public int pidfdOpen(long pid) throws ErrnoException {
            throw new ErrnoException("pidfd_open", Errno.ENOSYS, "Function not implemented");
        }
    }, processes);

    @Test
    void pidZeroOneWardenItselfAndItsGroupAreNeverSignalled() {
        long self = ProcessHandle.current().pid();
        assertFalse(signaller.allowed(0));
        assertFalse(signaller.allowed(1));
        assertFalse(signaller.allowed(-1), "kill(-1) would signal every process");
        assertFalse(signaller.allowed(self));
        assertFalse(signaller.allowed(-self));
        assertFalse(signaller.allowed(-processes.ownGroup()));
        assertTrue(signaller.allowed(self + 100_000));
    }

    @Test
    void aRefusedTargetIsNotSignalled() {
        ProcessInfo self = processes.info(ProcessHandle.current().pid()).orElseThrow();
        Signaller.Stop stop = signaller.terminate(self, false, Duration.ofMillis(10), Duration.ofMillis(10));
        assertFalse(stop.gone(), "warden must still be alive");
        assertTrue(stop.problem().orElseThrow().contains("refused"));
    }

    @Test
    void theCheckedProcessGetsSigtermWithAndWithoutPidfd() throws Exception {
        for (Signaller each : new Signaller[] {signaller, withoutPidfd}) {
            Process sleeper = new ProcessBuilder("sleep", "600").start();
            ProcessInfo checked = processes.info(sleeper.pid()).orElseThrow();
            assertTrue(each.terminate(checked, false, SHORT, SHORT).gone());
            assertTrue(sleeper.waitFor(5, TimeUnit.SECONDS));
            assertEquals(143, sleeper.exitValue());
        }
    }

    /**
     * The process with {@code pid} once it runs {@code sleep} (a spawned child runs a helper before it execs), as the
     * kernel shows it; empty if it is gone or never gets there.
     */
    private Optional<ProcessInfo> runningSleep(long pid) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        while (System.nanoTime() < deadline) {
            try {
                if (Files.readString(Path.of("/proc/" + pid + "/cmdline")).startsWith("sleep\0")) {
                    return processes.info(pid);
                }
            } catch (IOException e) {
                return Optional.empty();
            }
            Thread.sleep(5);
        }
        return Optional.empty();
    }

    /**
     * The checked process exits and the kernel hands its pid to a new process (root sets {@code ns_last_pid}, as CRIU
     * does) before the signal: the new process is never signalled. Whether it runs is asked of the kernel, not of
     * {@link Process}, which keys its exit bookkeeping by pid: a cold CI run once found the child that got the pid of one
     * just reaped reported as exited before any signal (likely that bookkeeping; not pinned down).
     */
    @Test
    void aPidReusedAfterTheCheckIsNeverSignalled() throws Exception {
        Assumptions.assumeTrue("0".equals(FileLocker.currentUid()), "setting ns_last_pid needs root, as CI has");
        for (Signaller each : new Signaller[] {signaller, withoutPidfd}) {
            ProcessInfo successor = null;
            ProcessInfo checked = null;
            for (int attempt = 0; attempt < 50 && successor == null; attempt++) {
                Process first = new ProcessBuilder("sleep", "600").start();
                checked = processes.info(first.pid()).orElseThrow();
                // A start time counts in clock ticks (10 ms): a pid reused within one is beyond any check but a
                // pidfd held from the check on. Wrapping the pid space, as reuse does without root, takes longer.
                Thread.sleep(30);
                first.destroyForcibly().waitFor();
                Files.writeString(Path.of("/proc/sys/kernel/ns_last_pid"), Long.toString(checked.pid() - 1));
                Process next = new ProcessBuilder("sleep", "600").start();
                Optional<ProcessInfo> running = next.pid() == checked.pid() ? runningSleep(next.pid()) : Optional.empty();
                if (running.isPresent()) {
                    successor = running.get();
                } else {
                    // another process forked in between and the pid went to it: try again
                    kill(next.pid());
                }
            }
            assertTrue(successor != null, "the kernel never handed the pid out again in 50 tries");
            try {
                Signaller.Stop stop = each.terminate(checked, false, SHORT, SHORT);
                assertTrue(stop.gone(), "the checked process is gone");
                assertTrue(processes.alive(successor), "the process that reused its pid was not signalled");
                Thread.sleep(200);
                assertTrue(processes.alive(successor), "nor a moment later");
            } finally {
                kill(successor.pid());
            }
        }
    }

    /** SIGKILL to the child with this pid, and its exit reaped (through the JDK, which spawned it). */
    private static void kill(long pid) throws IOException, InterruptedException {
        new ProcessBuilder("kill", "-KILL", Long.toString(pid)).inheritIO().start().waitFor();
        ProcessHandle.of(pid).ifPresent(p -> p.onExit().completeOnTimeout(p, 5, TimeUnit.SECONDS).join());
    }

    @Test
    void aSignalThatIsNotPermittedIsAProblemNamingThePid() throws Exception {
        Posix refusing = new DelegatingPosix(new NativePosix()) {
            @Override
            public boolean pidfdSignal(int pidfd, int signal, boolean group) throws ErrnoException {
                throw new ErrnoException("pidfd_send_signal", Errno.EPERM, "Operation not permitted");
            }
        };
        Process sleeper = new ProcessBuilder("sleep", "600").start();
        try {
            Signaller.Stop stop = new Signaller(refusing, processes)
                    .terminate(processes.info(sleeper.pid()).orElseThrow(), false, SHORT, SHORT);
            assertFalse(stop.gone());
            assertTrue(stop.problem().orElseThrow().contains("not permitted to signal pid " + sleeper.pid()));
        } finally {
            sleeper.destroyForcibly().waitFor();
        }
    }
}
