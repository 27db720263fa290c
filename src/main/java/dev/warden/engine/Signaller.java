package dev.warden.engine;

import dev.warden.lock.Errno;
import dev.warden.lock.Posix;
import java.time.Duration;
import java.util.Optional;
import org.jboss.logging.Logger;

/**
 * Sends SIGTERM, then SIGKILL, to a process as it was checked, and waits for it to be gone. Refuses
 * pid 0 and 1, warden's own pid and warden's own process group, whatever a record says.
 *
 * <p>A pid is only a number: the process checked may exit and its pid go to another between the check
 * and the signal, or during the grace. So every signal goes through a pidfd opened for the checked
 * instance ({@code pidfd_open}, Linux 5.3), which can never reach a later process; a group signal goes
 * through it too ({@code PIDFD_SIGNAL_PROCESS_GROUP}, Linux 6.9). On an older kernel the start time is
 * checked again right before each {@code kill}, which leaves a window of one system call.
 */
public final class Signaller {

    static final int SIGKILL = 9;
    static final int SIGTERM = 15;
    private static final Logger LOG = Logger.getLogger(Signaller.class);
    /** How often to look whether a signalled process is gone; a stop waits seconds, this adds little. */
    private static final long EXIT_POLL_MS = 10;

    private final Posix posix;
    private final ProcessTable processes;
    private final long self = ProcessHandle.current().pid();

    public Signaller(Posix posix, ProcessTable processes) {
        this.posix = posix;
        this.processes = processes;
    }

    /**
     * What a stop came to: whether the process is gone, and if not, why (for the log, or for a
     * liveness probe that must not stay quiet while a process it had to stop still runs).
     */
    public record Stop(boolean gone, Optional<String> problem) {

        static Stop done() {
            return new Stop(true, Optional.empty());
        }

        static Stop failed(String why) {
            return new Stop(false, Optional.of(why));
        }
    }

    /**
     * SIGTERM to {@code checked} (to its process group with {@code group}, which it must lead), up to
     * {@code termTimeout} for it to exit, then SIGKILL and up to {@code killTimeout}.
     */
    public Stop terminate(ProcessInfo checked, boolean group, Duration termTimeout, Duration killTimeout) {
        long pid = checked.pid();
        if (!allowed(pid) || group && (checked.pgid() != pid || !allowed(-pid))) {
            LOG.warnf("Refusing to signal %s %d: never pid 0 or 1, warden itself or its group, nor a group"
                    + " the process does not lead", group ? "group" : "pid", pid);
            return processes.alive(checked) ? Stop.failed("refused to signal pid " + pid) : Stop.done();
        }
        try (Target target = Target.open(posix, processes, checked)) {
            if (target == null) {
                return Stop.done();
            }
            String what = (group ? "group " : "pid ") + pid;
            if (!target.signal(SIGTERM, group)) {
                return Stop.done();
            }
            if (waitGone(checked, termTimeout)) {
                return Stop.done();
            }
            if (Thread.currentThread().isInterrupted()) {
                // warden is shutting down: SIGKILL without the grace the process was promised would be worse.
                LOG.infof("%s has SIGTERM; warden is shutting down, so it sends no SIGKILL", what);
                return Stop.failed(what + " has SIGTERM and has not exited yet");
            }
            LOG.infof("%s did not exit within %d ms of SIGTERM; sending SIGKILL", what, termTimeout.toMillis());
            if (!target.signal(SIGKILL, group) || waitGone(checked, killTimeout)) {
                return Stop.done();
            }
            LOG.warnf("%s survived SIGKILL for %d ms (stuck in the kernel?)", what, killTimeout.toMillis());
            return Stop.failed(what + " survived SIGKILL for " + killTimeout.toMillis() + " ms");
        } catch (Posix.ErrnoException e) {
            String why = e.errno() == Errno.EPERM
                    ? "not permitted to signal pid " + pid + " (another user's process, and warden lacks CAP_KILL)"
                    : "cannot signal pid " + pid + ": " + e.getMessage();
            LOG.warn(why);
            return processes.alive(checked) ? Stop.failed(why) : Stop.done();
        }
    }

    boolean allowed(long target) {
        long id = Math.abs(target);
        if (id <= 1 || id == self) {
            return false;
        }
        // warden's group looked up at the signal, not at start: gate mode builds a Signaller it may never use.
        return target > 0 || id != processes.ownGroup();
    }

    /**
     * The checked process, held by a pidfd where the kernel has them. Opened, then the instance checked
     * again: a pidfd names whichever process had the pid at open time, so a start time that still matches
     * after the open proves the pidfd names the process that was checked.
     */
    private static final class Target implements AutoCloseable {

        private final Posix posix;
        private final ProcessTable processes;
        private final ProcessInfo checked;
        /** -1 on a kernel without pidfd_open: then each signal checks the start time right before kill(2). */
        private final int pidfd;
        private boolean groupByPidfd = true;

        private Target(Posix posix, ProcessTable processes, ProcessInfo checked, int pidfd) {
            this.posix = posix;
            this.processes = processes;
            this.checked = checked;
            this.pidfd = pidfd;
        }

        /** The target, or null when the checked process is gone already (its pid free or another's). */
        static Target open(Posix posix, ProcessTable processes, ProcessInfo checked) throws Posix.ErrnoException {
            int pidfd;
            try {
                pidfd = posix.pidfdOpen(checked.pid());
            } catch (Posix.ErrnoException e) {
                if (e.errno() == Errno.ESRCH) {
                    return null;
                }
                if (e.errno() != Errno.ENOSYS) {
                    throw e;
                }
                pidfd = -1;
            }
            Target target = new Target(posix, processes, checked, pidfd);
            if (!processes.alive(checked)) {
                target.close();
                return null;
            }
            return target;
        }

        /** Sends {@code signal}; false when the checked process is gone (and nothing was signalled). */
        boolean signal(int signal, boolean group) throws Posix.ErrnoException {
            if (pidfd >= 0 && (!group || groupByPidfd)) {
                try {
                    return posix.pidfdSignal(pidfd, signal, group);
                } catch (Posix.ErrnoException e) {
                    if (!group || e.errno() != Errno.EINVAL) {
                        throw e;
                    }
                    // A kernel before 6.9 signals no group through a pidfd: kill(-pgid) below.
                    groupByPidfd = false;
                }
            }
            // The leader still being the checked process, its group id cannot name another group.
            boolean same = pidfd >= 0 ? posix.pidfdSignal(pidfd, 0, false) && processes.alive(checked)
                    : processes.alive(checked);
            return same && posix.kill(group ? -checked.pid() : checked.pid(), signal);
        }

        @Override
        public void close() {
            if (pidfd >= 0) {
                posix.close(pidfd);
            }
        }
    }

    private boolean waitGone(ProcessInfo checked, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (processes.alive(checked)) {
            if (System.nanoTime() >= deadline) {
                return false;
            }
            try {
                Thread.sleep(EXIT_POLL_MS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return !processes.alive(checked);
            }
        }
        return true;
    }
}
