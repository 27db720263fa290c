package dev.warden.gate;

import dev.warden.config.WardenConfig;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderCallbacks;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderElectionConfig;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderElectionConfigBuilder;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.LeaderElectionRecord;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.LeaseLock;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.Lock;
import io.fabric8.kubernetes.client.impl.KubernetesClientImpl;
import io.fabric8.kubernetes.client.jdkhttp.JdkHttpClientFactory;
import io.quarkus.runtime.annotations.RegisterForReflection;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.jboss.logging.Logger;

/**
 * The gate's election through a coordination.k8s.io/v1 Lease, as client-go's leader election runs
 * it: fabric8's leader elector (the client whose version Quarkus's BOM pins), acquiring every retry period,
 * renewing while it leads, and stepping down when a renewal has not succeeded within the renew
 * deadline (on warden's own clock, see {@link #leading()}), before the lease can expire for anyone
 * else. Every HTTP request is cut off after a retry period. After a step down it contends again.
 *
 * <p>In the native executable fabric8's builder finds its client by name, so that class's constructors are
 * registered here; the types the client reads and writes are in {@link LeaseModel}.
 */
@RegisterForReflection(targets = KubernetesClientImpl.class, methods = false, fields = false)
public final class LeaseElection implements GateElection {

    private static final Logger LOG = Logger.getLogger(LeaseElection.class);

    private final Settings settings;
    private final MonotonicClock clock;
    /** Every callback, request and answer moves this on; see {@link LeaseState}. */
    private final AtomicReference<LeaseState> state;
    private final AtomicBoolean stopped = new AtomicBoolean();
    private final AtomicReference<CompletableFuture<?>> running = new AtomicReference<>();
    /** Whether the Lease's absence, or a refusal to read it, was logged since a read last found it. */
    private final AtomicBoolean warnedUnusable = new AtomicBoolean();
    private KubernetesClient client;
    private Thread thread;
    /** Where the Lease lives, once {@link #start} resolved it. */
    private volatile String namespace = "";

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
        this(settings, MonotonicClock.SYSTEM);
    }

    LeaseElection(Settings settings, MonotonicClock clock) {
        this.settings = settings;
        this.clock = clock;
        this.state = new AtomicReference<>(LeaseState.initial(clock.now()));
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

    /** Starts contending on a thread of its own; {@code node} only names where this warden runs in the log. */
    public synchronized void start(Optional<String> node) {
        Config config = KubernetesAccess.config(System.getenv(), KubernetesAccess.SERVICE_ACCOUNT);
        int timeout = (int) settings.retryPeriod().toMillis();
        config.setRequestTimeout(timeout);
        config.setConnectionTimeout(timeout);
        config.setRequestRetryBackoffLimit(0);
        namespace = settings.namespace().orElse(Optional.ofNullable(config.getNamespace()).orElse("default"));
        // The JDK's HTTP client, named rather than found through a ServiceLoader (the native executable registers none).
        client = new KubernetesClientBuilder().withConfig(config).withHttpClientFactory(new JdkHttpClientFactory()).build();
        LOG.infof("Contending for Lease %s/%s as %s%s (lease %d s, renew deadline %d s, retry %d s)", namespace,
                settings.name(), settings.identity(), node.map(n -> " on node " + n).orElse(""),
                settings.duration().toSeconds(), settings.renewDeadline().toSeconds(), settings.retryPeriod().toSeconds());
        state.updateAndGet(s -> s.began(clock.now()));
        thread = Thread.ofPlatform().daemon().name("warden-lease").start(this::contend);
    }

    private void contend() {
        while (!stopped.get()) {
            LeaseLock lock = new UnheldLeaseLock(namespace, settings.name(), settings.identity(), settings.duration());
            CompletableFuture<?> elector = client.leaderElector().withConfig(electionConfig(lock)).build().start();
            running.set(elector);
            if (stopped.get()) {
                elector.cancel(true);
            }
            try {
                elector.join();
            } catch (RuntimeException e) {
                if (!stopped.get() && state.get().asideUntil().isEmpty()) {
                    LOG.warnf("The Lease election ended (%s); contending again", e.getMessage());
                }
            }
            // A renewal failed past the deadline (stepped down), the elector gave up, or this warden stepped aside.
            state.updateAndGet(LeaseState::stoppedLeading);
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

    /**
     * Releases the Lease (fabric8 releases it when its elector is cancelled) and stays out for three retry periods,
     * longer than another contender's jittered retry (up to 2.2 retry periods), so that one takes it.
     */
    @Override
    public void stepAside() {
        Duration aside = settings.retryPeriod().multipliedBy(3);
        state.updateAndGet(s -> s.asideUntil(clock.now().plus(aside)));
        CompletableFuture<?> elector = running.get();
        if (elector != null) {
            elector.cancel(true);
        }
        LOG.infof("Stepping aside from the Lease %s for %d s", settings.name(), aside.toSeconds());
    }

    /**
     * fabric8's elector configured with warden's timings and callbacks. The callbacks must never throw:
     * fabric8 runs them inside its own steps, and a step that throws ends the election without completing
     * the elector's future, leaving this warden out of the election until it restarts.
     */
    LeaderElectionConfig electionConfig(Lock lock) {
        return new LeaderElectionConfigBuilder()
                .withName(settings.name())
                .withLock(new Timed(lock))
                .withLeaseDuration(settings.duration())
                .withRenewDeadline(settings.renewDeadline())
                .withRetryPeriod(settings.retryPeriod())
                .withReleaseOnCancel(true)
                .withLeaderCallbacks(new LeaderCallbacks(this::startedLeading, this::stoppedLeading, this::newLeader))
                .build();
    }

    /**
     * The elector's lock, timed: when the elector last began asking the API server anything (whatever the answer), what
     * each read found, and when the last write naming this warden that the API server took was sent.
     */
    private final class Timed implements Lock {
        private final Lock lock;

        Timed(Lock lock) {
            this.lock = lock;
        }

        @Override
        public LeaderElectionRecord get(KubernetesClient kubernetes) {
            state.updateAndGet(s -> s.asked(clock.now()));
            LeaderElectionRecord record;
            try {
                record = lock.get(kubernetes);
            } catch (RuntimeException e) {
                state.updateAndGet(LeaseState::failed);
                if (e instanceof KubernetesClientException refused && refused.getCode() == 403) {
                    warnUnusable("may not be read by this warden: its Role allows another Lease (warden.gate.lease.name "
                            + "must name the Lease the chart made)");
                }
                throw e;
            }
            if (record != null) {
                warnedUnusable.set(false);
            }
            state.updateAndGet(s -> s.read(Optional.ofNullable(record).map(LeaderElectionRecord::getHolderIdentity),
                    renewTime(record), settings.identity()));
            return record;
        }

        /**
         * The chart creates the Lease and its Role has no create (RBAC cannot name what a create makes): a warden that
         * gets here finds the Lease deleted, or not yet made, and the API server refuses.
         */
        @Override
        public void create(KubernetesClient kubernetes, LeaderElectionRecord record) {
            try {
                write(record, () -> lock.create(kubernetes, record));
            } catch (KubernetesClientException e) {
                if (e.getCode() == 403) {
                    warnUnusable("does not exist, and this warden may not create it (its Role allows get, update and patch "
                            + "on that one Lease): helm upgrade creates it again, or create it with kubectl, "
                            + "spec.leaseDurationSeconds " + settings.duration().toSeconds());
                }
                throw e;
            }
        }

        @Override
        public void update(KubernetesClient kubernetes, LeaderElectionRecord record) {
            write(record, () -> lock.update(kubernetes, record));
        }

        private void write(LeaderElectionRecord record, Runnable request) {
            Moment sent = clock.now();
            state.updateAndGet(s -> s.asked(sent));
            try {
                request.run();
            } catch (RuntimeException e) {
                state.updateAndGet(LeaseState::failed);
                throw e;
            }
            state.updateAndGet(s -> s.accepted(record.getHolderIdentity(), renewTime(record), settings.identity(), sent));
        }

        @Override
        public String identity() {
            return lock.identity();
        }

        @Override
        public String describe() {
            return lock.describe();
        }
    }

    /** Logged once until a read finds the Lease again; the elector retries every retry period meanwhile. */
    private void warnUnusable(String what) {
        if (warnedUnusable.compareAndSet(false, true)) {
            LOG.warnf("The Lease %s/%s %s. This warden does not lead until then.", namespace, settings.name(), what);
        }
    }

    private static Optional<Instant> renewTime(LeaderElectionRecord record) {
        return Optional.ofNullable(record).map(LeaderElectionRecord::getRenewTime).map(t -> t.toInstant());
    }

    private void startedLeading() {
        state.updateAndGet(s -> s.startedLeading(settings.identity()));
        LOG.infof("Holding the Lease %s as %s", settings.name(), settings.identity());
    }

    private void stoppedLeading() {
        LeaseState before = state.getAndUpdate(LeaseState::stoppedLeading);
        if (before.leading() && !before.warned()) {
            LOG.warnf("Stepped down: the Lease %s was not renewed within %d s", settings.name(),
                    settings.renewDeadline().toSeconds());
        }
    }

    /** {@code identity} is null when the Lease was released: it names no holder until someone takes it. */
    private void newLeader(String identity) {
        LeaseState before = state.getAndUpdate(s -> s.newLeader(Optional.ofNullable(identity)));
        if (identity != null && !before.holder().equals(Optional.of(identity)) && !identity.equals(settings.identity())) {
            LOG.infof("The Lease %s is held by %s", settings.name(), identity);
        }
    }

    /**
     * Stops. With {@code letGo} the elector is cancelled, which releases the Lease (the next warden need not wait for it
     * to expire); without, its client is closed under it and the Lease expires as if this warden had died.
     */
    @Override
    public void close(boolean letGo) {
        stopped.set(true);
        CompletableFuture<?> elector = running.get();
        if (elector != null && letGo) {
            elector.cancel(true);
        }
        state.updateAndGet(LeaseState::stoppedLeading);
        Thread contender = thread;
        if (contender != null && letGo) {
            try {
                contender.join(settings.retryPeriod().toMillis() + 1000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (client != null) {
            client.close();
        }
    }

    private void pause(Duration duration) {
        try {
            Thread.sleep(duration);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stopped.set(true);
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
