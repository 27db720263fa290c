package dev.warden.gate;

import dev.warden.engine.ProcessInfo;
import dev.warden.engine.ProcessTable;
import dev.warden.engine.Signaller;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.jboss.logging.Logger;

/**
 * Stops this pod's {@code lilbee serve} when its warden no longer holds the Lease: SIGTERM, then
 * SIGKILL after the grace. Only a process proven to be it is signalled: it holds {@code server.lock}
 * in this pod (the caller saw that in the kernel's lock table) and its command line is
 * {@code lilbee ... serve}. One fence at a time; asked again for the same pid while one runs, it
 * waits for that one.
 */
public final class LilbeeFence {

    private static final Logger LOG = Logger.getLogger(LilbeeFence.class);

    private final Signaller signaller;
    private final ProcessTable processes;
    private final Duration grace;
    private final Duration killTimeout;
    private CompletableFuture<Boolean> running = CompletableFuture.completedFuture(true);
    private long fencing;
    private long refused;

    public LilbeeFence(Signaller signaller, ProcessTable processes, Duration grace, Duration killTimeout) {
        this.signaller = signaller;
        this.processes = processes;
        this.grace = grace;
        this.killTimeout = killTimeout;
    }

    /** Starts stopping {@code pid}, the holder of this pod's server.lock, unless that is under way or it is not lilbee. */
    public synchronized void fence(long pid) {
        if (!running.isDone() && fencing == pid) {
            return;
        }
        Optional<ProcessInfo> info = processes.info(pid);
        if (info.isEmpty() || !isLilbeeServe(info.get())) {
            if (refused != pid) {
                refused = pid;
                LOG.warnf("pid %d holds server.lock but is not `lilbee serve`: not signalled", pid);
            }
            return;
        }
        fencing = pid;
        LOG.warnf("Fencing this pod's lilbee (pid %d): SIGTERM, SIGKILL after %d ms", pid, grace.toMillis());
        running = CompletableFuture.supplyAsync(() -> signaller.terminate(pid, pid, grace, killTimeout),
                command -> Thread.ofPlatform().daemon().name("warden-fence").start(command));
    }

    /** argv names the {@code lilbee} program (run as itself or by a python) and its {@code serve} command. */
    static boolean isLilbeeServe(ProcessInfo info) {
        boolean lilbee = false;
        for (String arg : info.argv()) {
            Path name = arg.isEmpty() ? null : Path.of(arg).getFileName();
            if (name != null && name.toString().equals("lilbee")) {
                lilbee = true;
            } else if (lilbee && arg.equals("serve")) {
                return true;
            }
        }
        return false;
    }
}
