package dev.warden.routing;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.jboss.logging.Logger;

/**
 * Keeps the role label on warden's own pod in step with readiness: {@code primary} while this pod serves,
 * {@code standby} from the round it stops (and when warden stops, before anything else lets go), looked at every
 * {@code interval}; a patch the API server did not take is tried again every {@code retry}, and said once per reason.
 * On its own thread: the API server's answer never holds up the gate keeper or a probe.
 */
public final class RoleKeeper {

    private static final Logger LOG = Logger.getLogger(RoleKeeper.class);

    private final PodLabel label;
    private final BooleanSupplier ready;
    private final Duration interval;
    private final Duration retry;
    private final AtomicReference<Role> applied = new AtomicReference<>();
    private volatile boolean stopped;
    private Thread thread;

    public RoleKeeper(PodLabel label, BooleanSupplier ready, Duration interval, Duration retry) {
        this.label = label;
        this.ready = ready;
        this.interval = interval;
        this.retry = retry;
    }

    public synchronized void start() {
        thread = Thread.ofPlatform().daemon().name("warden-role").start(this::keep);
    }

    /** The role the API server last took for this pod; null before the first. */
    public Role applied() {
        return applied.get();
    }

    private void keep() {
        // nanoTime's origin is arbitrary (it may be negative): moments are compared by their difference only.
        long retryAt = System.nanoTime();
        String complained = null;
        while (!stopped) {
            Role wanted = Role.of(ready.getAsBoolean());
            if (wanted != applied.get() && System.nanoTime() - retryAt >= 0) {
                try {
                    label.set(wanted.value());
                    LOG.infof("pod %s is labelled %s: %s", label.pod(), wanted.value(), wanted == Role.PRIMARY
                            ? "the Service sends clients here" : "the Service sends clients elsewhere");
                    applied.set(wanted);
                    complained = null;
                } catch (Exception e) {
                    retryAt = System.nanoTime() + retry.toNanos();
                    if (!String.valueOf(e.getMessage()).equals(complained)) {
                        complained = String.valueOf(e.getMessage());
                        LOG.warnf("%s; trying again every %d ms", complained, retry.toMillis());
                    }
                }
            }
            pause(interval);
        }
    }

    /**
     * Stops looking and labels the pod {@code standby}, waiting for the API server's answer (its request timeout): a
     * warden that stops lets its lilbee go next, and the Service must not send clients to a pod that no longer serves.
     */
    public void stop() {
        Thread running;
        synchronized (this) {
            stopped = true;
            running = thread;
        }
        if (running != null) {
            try {
                running.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (applied.get() != Role.STANDBY) {
            try {
                label.set(Role.STANDBY.value());
                applied.set(Role.STANDBY);
                LOG.infof("pod %s is labelled standby: warden stops", label.pod());
            } catch (Exception e) {
                LOG.warnf("%s: the pod leaves the Service once it is no longer ready", e.getMessage());
            }
        }
    }

    private static void pause(Duration length) {
        try {
            Thread.sleep(length);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
