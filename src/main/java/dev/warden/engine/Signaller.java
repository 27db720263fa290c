package dev.warden.engine;

import dev.warden.lock.Posix;
import java.time.Duration;
import org.jboss.logging.Logger;

/**
 * Sends SIGTERM, then SIGKILL, and waits for the process to be gone. Refuses pid 0 and 1,
 * warden's own pid and warden's own process group, whatever a record says.
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
    private final long ownGroup;

    public Signaller(Posix posix, ProcessTable processes) {
        this.posix = posix;
        this.processes = processes;
        this.ownGroup = processes.ownGroup();
    }

    /**
     * SIGTERM to {@code target} (a pid, or a group as a negative number), up to {@code termTimeout}
     * for {@code pid} to exit, then SIGKILL and up to {@code killTimeout}.
     *
     * @return true when {@code pid} is gone at the end
     */
    public boolean terminate(long target, long pid, Duration termTimeout, Duration killTimeout) {
        if (!allowed(target)) {
            LOG.warnf("Refusing to signal %s %d: never pid 0 or 1, warden itself or its group",
                    target < 0 ? "group" : "pid", Math.abs(target));
            return !processes.alive(pid);
        }
        send(target, SIGTERM);
        if (waitGone(pid, termTimeout)) {
            return true;
        }
        if (Thread.currentThread().isInterrupted()) {
            // warden is shutting down: SIGKILL without the grace the engine was promised would be worse.
            LOG.infof("%d has SIGTERM; warden is shutting down, so it sends no SIGKILL", pid);
            return false;
        }
        LOG.infof("%d did not exit within %d ms of SIGTERM; sending SIGKILL", pid, termTimeout.toMillis());
        send(target, SIGKILL);
        if (waitGone(pid, killTimeout)) {
            return true;
        }
        LOG.warnf("%d survived SIGKILL for %d ms (stuck in the kernel?)", pid, killTimeout.toMillis());
        return false;
    }

    boolean allowed(long target) {
        long id = Math.abs(target);
        if (id <= 1 || id == self) {
            return false;
        }
        return target > 0 || id != ownGroup;
    }

    private void send(long target, int signal) {
        try {
            posix.kill(target, signal);
        } catch (Posix.ErrnoException e) {
            LOG.warnf("Cannot signal %d: %s", target, e.getMessage());
        }
    }

    private boolean waitGone(long pid, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (processes.alive(pid)) {
            if (System.nanoTime() >= deadline) {
                return false;
            }
            try {
                Thread.sleep(EXIT_POLL_MS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return !processes.alive(pid);
            }
        }
        return true;
    }
}
