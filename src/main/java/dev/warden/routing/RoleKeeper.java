package dev.warden.routing;

import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.jboss.logging.Logger;

/**
 * Keeps the Service's Endpoints in step with readiness ({@link Route}): while this pod serves, it routes here alone,
 * written at once when this pod begins to serve and read again every {@code resync} (a warden that lost the gate may
 * still have written itself in, before its readiness knew; another writer may have changed its ports or target); from
 * the round this pod stops serving, and when warden stops (before anything else lets go), it routes here no more.
 * Readiness is looked at every {@code interval}; a request the API server did not answer is tried again every
 * {@code retry} and said once per reason, one that lost a race (the Endpoints changed since it was read) at once. On its
 * own thread: the API server's answer never holds up the gate keeper or a probe.
 */
public final class RoleKeeper {

    private static final Logger LOG = Logger.getLogger(RoleKeeper.class);
    /** Lost races in a row after which another writer is said to be fighting this one. */
    private static final int CHANGED_SAID_AFTER = 20;
    /** How long a stop goes on taking this pod out once the loop has ended: the API server may not answer. */
    private static final Duration STOP_WITHIN = Duration.ofSeconds(3);

    private final ServiceEndpoints endpoints;
    private final BooleanSupplier ready;
    private final Duration interval;
    private final Duration resync;
    private final Duration retry;
    private final AtomicReference<Role> applied = new AtomicReference<>();
    private volatile boolean stopped;
    private Thread thread;

    public RoleKeeper(ServiceEndpoints endpoints, BooleanSupplier ready, Duration interval, Duration resync, Duration retry) {
        this.endpoints = endpoints;
        this.ready = ready;
        this.interval = interval;
        this.resync = resync;
        this.retry = retry;
    }

    public synchronized void start() {
        thread = Thread.ofPlatform().daemon().name("warden-role").start(this::keep);
    }

    /**
     * Whether the Endpoints routed here ({@link Role#PRIMARY}) or not, as this warden last read or wrote it; null
     * before the first answer.
     */
    public Role applied() {
        return applied.get();
    }

    private void keep() {
        // nanoTime's origin is arbitrary (it may be negative): moments are compared by their difference only.
        long retryAt = System.nanoTime();
        long lookAt = retryAt;
        Optional<Boolean> kept = Optional.empty();
        String complained = null;
        int changed = 0;
        while (!stopped) {
            boolean serving = ready.getAsBoolean();
            long now = System.nanoTime();
            boolean due = !kept.equals(Optional.of(serving)) || serving && now - lookAt >= 0;
            if (due && now - retryAt >= 0) {
                try {
                    keep(serving);
                    kept = Optional.of(serving);
                    lookAt = now + resync.toNanos();
                    complained = null;
                    changed = 0;
                } catch (ServiceEndpoints.Changed e) {
                    // another writer wrote it meanwhile: read it again next round
                    if (++changed == CHANGED_SAID_AFTER) {
                        LOG.warnf("The Endpoints %s changed between this warden's read and its write %d times in a row:"
                                + " another writer keeps writing it (another warden that believes it serves, or something"
                                + " outside the chart)", endpoints.describe(), CHANGED_SAID_AFTER);
                    }
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

    /** Reads the Endpoints and writes it as {@link Route} says for a pod that serves, or not. */
    private void keep(boolean serving) throws Exception {
        ServiceEndpoints.Routed read = endpoints.read();
        Optional<Set<String>> next = Route.next(serving, endpoints.own(), read.addresses())
                .or(() -> serving && !endpoints.asWritten(read) ? Optional.of(Set.of(endpoints.own())) : Optional.empty());
        ServiceEndpoints.Routed now = next.isPresent() ? endpoints.write(read, next.get()) : read;
        Role role = Role.of(now.addresses().contains(endpoints.own()));
        if (applied.getAndSet(role) != role || next.isPresent()) {
            LOG.infof("The Service's Endpoints %s %s", endpoints.describe(), role == Role.PRIMARY
                    ? "routes clients to this pod (" + endpoints.own() + ")" : "routes clients elsewhere"
                            + (next.isPresent() ? ": this pod taken out" : ""));
        }
    }

    /**
     * Stops looking and takes this pod out of the Endpoints, waiting for the API server's answer (its request timeout;
     * again, for up to {@link #STOP_WITHIN}, if another writer wrote it meanwhile): a warden that stops lets its lilbee
     * go next, and the Service must not send clients to a pod that no longer serves. Nothing is asked where the
     * Endpoints, last read or written, did not route here.
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
        if (applied.get() == Role.STANDBY) {
            return; // out as last read or written, and only this pod's warden writes it in
        }
        long until = System.nanoTime() + STOP_WITHIN.toNanos();
        do {
            try {
                keep(false);
                return;
            } catch (ServiceEndpoints.Changed e) {
                // read it again
            } catch (Exception e) {
                LOG.warnf("%s: the Endpoints may route here until the next serving warden writes itself in", e.getMessage());
                return;
            }
        } while (System.nanoTime() - until < 0);
    }

    private static void pause(Duration length) {
        try {
            Thread.sleep(length);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
