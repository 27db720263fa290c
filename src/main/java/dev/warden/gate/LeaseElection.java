package dev.warden.gate;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.warden.config.WardenConfig;
import dev.warden.kube.ApiServer;
import dev.warden.kube.KubernetesAccess;
import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.jboss.logging.Logger;

/**
 * The gate's election through a coordination.k8s.io/v1 Lease, as client-go's leader election runs it: while not
 * leading, try to take the Lease every retry period (jittered up to 1.2 more, so that contenders do not ask in step);
 * while leading, renew it every retry period, and step down when no renewal has succeeded within the renew deadline
 * (on warden's own clock, see {@link #leading()}), before the Lease can expire for anyone else. What to write of the
 * Lease read is {@link LeaseRecord#next}; every request is cut off after a retry period. After a step-down it contends
 * again.
 */
public final class LeaseElection implements GateElection {

    private static final Logger LOG = Logger.getLogger(LeaseElection.class);
    /** client-go's: a contender waits a retry period and up to 1.2 more between attempts to take the Lease. */
    private static final double JITTER = 1.2;

    private final Settings settings;
    private final MonotonicClock clock;
    private final Clock wall;
    /** Every request and answer moves this on; see {@link LeaseState}. */
    private final AtomicReference<LeaseState> state;
    private final AtomicBoolean stopped = new AtomicBoolean();
    /** Set by {@link #stepAside} and {@link #close}: the contending thread lets the Lease go. */
    private final AtomicBoolean letGo = new AtomicBoolean();
    /** Whether the Lease's absence, or a refusal to read it, was logged since a read last found it. */
    private final AtomicBoolean warnedUnusable = new AtomicBoolean();
    /** Whether a request that got no answer was logged since the API server last answered. */
    private final AtomicBoolean warnedUnanswered = new AtomicBoolean();
    private final Object wake = new Object();
    private volatile LeaseStore store;
    private Thread thread;
    /** The Lease as this warden last read or wrote it, and when (on its clock) it first saw it so. */
    private Optional<LeaseStore.Stored> observed = Optional.empty();
    private Moment observedAt;
    /** The holder last reported to the log and the state: client-go's maybeReportTransition. */
    private Optional<String> reported = Optional.empty();

    /**
     * @param namespace where the Lease lives; empty: the pod's own (the service account's namespace,
     *     else the kubeconfig context's)
     */
    public record Settings(String name, Optional<String> namespace, String identity, Duration duration,
            Duration renewDeadline, Duration retryPeriod) {

        /**
         * From {@code warden.gate.lease.*}. The identity defaults to {@code $POD_NAME}, else the host name, and names the
         * node too where {@code $NODE_NAME} is set ({@code <pod>@<node>}): a warden restarted in place finds the Lease
         * naming it and renews it at once (its lilbee goes on), but a pod of the same name on another node is another
         * contender, which waits for the Lease to pass as any does.
         */
        public static Settings of(WardenConfig.Gate.Lease lease, Map<String, String> env) {
            Optional<String> node = Optional.ofNullable(env.get("NODE_NAME")).filter(s -> !s.isBlank());
            String identity = lease.identity().or(() -> Optional.ofNullable(env.get("POD_NAME")).filter(s -> !s.isBlank())
                    .map(pod -> node.map(n -> pod + "@" + n).orElse(pod))).orElseGet(LeaseElection::hostName);
            return new Settings(lease.name(), lease.namespace(), identity, lease.duration(), lease.renewDeadline(),
                    lease.retryPeriod());
        }
    }

    public LeaseElection(Settings settings) {
        this(settings, MonotonicClock.SYSTEM, Clock.systemUTC());
    }

    LeaseElection(Settings settings, MonotonicClock clock, Clock wall) {
        this.settings = settings;
        this.clock = clock;
        this.wall = wall;
        this.state = new AtomicReference<>(LeaseState.initial(clock.now()));
        this.observedAt = clock.now();
    }

    /** Where this warden stands, as one value. */
    LeaseState state() {
        return state.get();
    }

    /**
     * While this warden leads, when its lead ends: see {@link LeaseState#leadingUntil}. Logs the step-down at the
     * deadline once.
     */
    @Override
    public Optional<Moment> leadingUntil() {
        Moment now = clock.now();
        LeaseState current = state.get();
        Optional<Moment> until = current.leadingUntil(now, settings.renewDeadline());
        if (until.isEmpty() && current.leading() && current.lastWriteSent().isPresent() && !current.warned()) {
            state.updateAndGet(LeaseState::warnedOfTheDeadline);
            LOG.warnf("Stepped down: the Lease %s was not renewed within %d s", settings.name(),
                    settings.renewDeadline().toSeconds());
        }
        return until;
    }

    @Override
    public boolean leading() {
        return leadingUntil().isPresent();
    }

    /** The first read of the Lease was answered (or failed), or took longer than a request may. */
    @Override
    public boolean decided() {
        return state.get().decided(clock.now(), settings.retryPeriod());
    }

    @Override
    public String name() {
        return settings.name();
    }

    @Override
    public String identity() {
        return settings.identity();
    }

    @Override
    public Optional<String> holder() {
        return state.get().holder();
    }

    @Override
    public Optional<Instant> renewed() {
        return state.get().renewed();
    }

    /**
     * How long the elector has gone without asking the API server anything (see {@link LeaseState#stalled}); never while
     * stopped. An elector that stopped without ending would leave this warden out of the election until it restarts.
     */
    @Override
    public Optional<Duration> stalled(Duration patience) {
        return stopped.get() ? Optional.empty() : state.get().stalled(clock.now(), patience, settings.retryPeriod());
    }

    /**
     * Starts contending on a thread of its own, through the service account mounted for warden (outside a pod, the
     * kubeconfig's current context); {@code node} only names where this warden runs in the log.
     */
    public synchronized void start(Optional<String> node) {
        ApiServer api = new ApiServer(KubernetesAccess.of(System.getenv(), KubernetesAccess.SERVICE_ACCOUNT), settings.retryPeriod());
        String namespace = settings.namespace().or(api::namespace).orElse("default");
        start(new ApiLeases(api, new ObjectMapper(), namespace, settings.name()), node);
    }

    synchronized void start(LeaseStore leases, Optional<String> node) {
        store = leases;
        LOG.infof("Contending for Lease %s as %s%s (lease %d s, renew deadline %d s, retry %d s)", store.describe(),
                settings.identity(), node.map(n -> " on node " + n).orElse(""), settings.duration().toSeconds(),
                settings.renewDeadline().toSeconds(), settings.retryPeriod().toSeconds());
        state.updateAndGet(s -> s.began(clock.now()));
        thread = Thread.ofPlatform().daemon().name("warden-lease").start(this::contend);
    }

    private void contend() {
        while (!stopped.get()) {
            if (acquire()) {
                renew();
            }
            // Only a leader told to (stepping aside, or stopping with its lilbee stopped) lets the Lease go. One that stepped
            // down at the renew deadline leaves it to expire: another takes it a Lease duration after its last renewal,
            // not a renew deadline, and the difference is the time its lilbee has to stop after its permit ran out.
            if (letGo.getAndSet(false)) {
                release();
            }
            state.updateAndGet(LeaseState::stoppedLeading);
            if (stopped.get()) {
                return;
            }
            pause(settings.retryPeriod());
            state.get().asideUntil().ifPresent(until -> {
                Duration aside = until.since(clock.now());
                if (aside.isPositive()) {
                    pause(aside);
                }
            });
            state.updateAndGet(LeaseState::backIn);
        }
    }

    /** Tries to take the Lease until it does (true), or is told to stop or step aside (false). */
    private boolean acquire() {
        while (contending()) {
            if (tryAcquireOrRenew()) {
                state.updateAndGet(s -> s.startedLeading(settings.identity()));
                LOG.infof("Holding the Lease %s as %s", settings.name(), settings.identity());
                return true;
            }
            long retry = settings.retryPeriod().toNanos();
            pause(Duration.ofNanos(retry + (long) (ThreadLocalRandom.current().nextDouble() * JITTER * retry)));
        }
        return false;
    }

    /**
     * Renews the Lease every retry period while it leads; returns when no renewal succeeded within the renew deadline
     * (stepped down), or when told to stop or step aside.
     */
    private void renew() {
        while (contending()) {
            pause(settings.retryPeriod());
            Moment deadline = clock.now().plus(settings.renewDeadline());
            boolean renewed = contending() && tryAcquireOrRenew();
            while (!renewed && contending() && clock.now().plus(settings.retryPeriod()).isBefore(deadline)) {
                pause(settings.retryPeriod());
                renewed = contending() && tryAcquireOrRenew();
            }
            if (!renewed && contending()) {
                LeaseState before = state.getAndUpdate(LeaseState::stoppedLeading);
                if (before.leading() && !before.warned()) {
                    LOG.warnf("Stepped down: the Lease %s was not renewed within %d s", settings.name(),
                            settings.renewDeadline().toSeconds());
                }
                return;
            }
        }
    }

    /**
     * One round of client-go's tryAcquireOrRenew: read the Lease (create it where it does not exist), decide
     * ({@link LeaseRecord#next}), write. True when this warden holds it now.
     */
    private boolean tryAcquireOrRenew() {
        Moment asked = clock.now();
        state.updateAndGet(s -> s.asked(asked));
        try {
            Optional<LeaseStore.Stored> read = store.get();
            answered();
            if (read.isEmpty()) {
                return create(asked);
            }
            warnedUnusable.set(false);
            LeaseRecord record = read.get().record();
            state.updateAndGet(s -> s.read(record.holder(), record.renewTime(), settings.identity()));
            if (observed.map(o -> !o.record().equals(record)).orElse(true)) {
                observedAt = clock.now();
            }
            observed = read;
            report(record.holder());
            Optional<LeaseRecord> next = record.next(settings.identity(), settings.duration(), observedAt, clock.now(),
                    wall.instant());
            if (next.isEmpty()) {
                return false;
            }
            Moment sent = clock.now();
            state.updateAndGet(s -> s.asked(sent));
            return written(store.update(read.get(), next.get()), next.get(), sent);
        } catch (LeaseStore.Refused e) {
            answered();
            state.updateAndGet(LeaseState::failed);
            if (e.status() == 403) {
                warnUnusable("may not be " + e.what() + " by this warden: its Role allows another Lease"
                        + " (warden.gate.lease.name must name the Lease the chart made)");
            } else if (e.status() != 409) {
                LOG.debugf("%s", e.getMessage());
            }
            return false;
        } catch (IOException | RuntimeException e) {
            state.updateAndGet(LeaseState::failed);
            if (warnedUnanswered.compareAndSet(false, true)) {
                LOG.warnf("The API server did not answer for the Lease %s (%s); asking again every %d s", store.describe(),
                        e.toString(), settings.retryPeriod().toSeconds());
            }
            return false;
        } catch (InterruptedException e) {
            state.updateAndGet(LeaseState::failed);
            return false;
        }
    }

    /**
     * The Lease does not exist: created, naming this warden. The chart makes the Lease and its Role has no create (RBAC
     * cannot name what a create makes): a warden that gets here finds the Lease deleted, or not yet made, and the API
     * server refuses.
     */
    private boolean create(Moment sent) throws IOException, InterruptedException, LeaseStore.Refused {
        LeaseRecord first = LeaseRecord.first(settings.identity(), settings.duration(), wall.instant());
        try {
            return written(store.create(first), first, sent);
        } catch (LeaseStore.Refused e) {
            if (e.status() != 403) {
                throw e;
            }
            state.updateAndGet(LeaseState::failed);
            warnUnusable("does not exist, and this warden may not create it (its Role allows get and update on that one"
                    + " Lease): helm upgrade creates it again, or create it with kubectl, spec.leaseDurationSeconds "
                    + settings.duration().toSeconds());
            return false;
        }
    }

    private void answered() {
        if (warnedUnanswered.getAndSet(false)) {
            LOG.infof("The API server answers for the Lease %s again", store.describe());
        }
    }

    /** A write the API server took, sent at {@code sent}. */
    private boolean written(LeaseStore.Stored stored, LeaseRecord record, Moment sent) {
        observed = Optional.of(stored);
        observedAt = clock.now();
        state.updateAndGet(s -> s.accepted(record.holder().orElse(""), record.renewTime(), settings.identity(), sent));
        report(record.holder());
        return record.holder().filter(settings.identity()::equals).isPresent();
    }

    /** The holder seen changed: logged once per change, as client-go reports a new leader. */
    private void report(Optional<String> holder) {
        if (holder.equals(reported)) {
            return;
        }
        reported = holder;
        state.updateAndGet(s -> s.newLeader(holder));
        holder.filter(h -> !h.equals(settings.identity()))
                .ifPresent(h -> LOG.infof("The Lease %s is held by %s", settings.name(), h));
    }

    /** A leader lets the Lease go, as client-go releases it: no holder, a second's duration. */
    private void release() {
        Optional<LeaseStore.Stored> last = observed;
        if (last.isEmpty() || !last.get().record().holder().equals(Optional.of(settings.identity()))) {
            return;
        }
        try {
            observed = Optional.of(store.update(last.get(), last.get().record().released(wall.instant())));
            report(Optional.empty());
        } catch (IOException | LeaseStore.Refused | RuntimeException e) {
            LOG.infof("The Lease %s could not be released (%s): it expires instead", settings.name(), e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Releases the Lease and stays out for three retry periods, longer than another contender's jittered retry (up to
     * 2.2 retry periods), so that one takes it.
     */
    @Override
    public void stepAside() {
        Duration aside = settings.retryPeriod().multipliedBy(3);
        state.updateAndGet(s -> s.asideUntil(clock.now().plus(aside)));
        letGo.set(true);
        wakeUp();
        LOG.infof("Stepping aside from the Lease %s for %d s", settings.name(), aside.toSeconds());
    }

    /** Logged once until a read finds the Lease again; the elector retries every retry period meanwhile. */
    private void warnUnusable(String what) {
        if (warnedUnusable.compareAndSet(false, true)) {
            LOG.warnf("The Lease %s %s. This warden does not lead until then.", store.describe(), what);
        }
    }

    /**
     * Stops. With {@code letGo} the Lease is released (the next warden need not wait for it to expire); without, the
     * client is closed under the contending thread and the Lease expires as if this warden had died.
     */
    @Override
    public void close(boolean letGo) {
        this.letGo.set(letGo);
        stopped.set(true);
        state.updateAndGet(LeaseState::stoppedLeading);
        wakeUp();
        Thread contender = thread;
        if (contender != null && letGo) {
            try {
                contender.join(settings.retryPeriod().toMillis() * 2 + 1000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (store != null) {
            store.close();
        }
    }

    /** Neither told to stop nor to step aside. */
    private boolean contending() {
        return !stopped.get() && !letGo.get();
    }

    private void wakeUp() {
        synchronized (wake) {
            wake.notifyAll();
        }
    }

    /** Sleeps for {@code duration}, or until told to stop or step aside. */
    private void pause(Duration duration) {
        Moment until = clock.now().plus(duration);
        synchronized (wake) {
            while (contending()) {
                long left = until.since(clock.now()).toMillis();
                if (left <= 0) {
                    return;
                }
                try {
                    wake.wait(left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    stopped.set(true);
                    return;
                }
            }
        }
    }

    private static String hostName() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            return "warden-" + ProcessHandle.current().pid();
        }
    }
}
