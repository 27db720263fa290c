package dev.warden.gate;

import dev.warden.config.WardenConfig;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
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
    private final AtomicBoolean leading = new AtomicBoolean();
    private final AtomicReference<String> holder = new AtomicReference<>();
    private final AtomicReference<Instant> renewed = new AtomicReference<>();
    private final AtomicBoolean stopped = new AtomicBoolean();
    private final AtomicReference<CompletableFuture<?>> running = new AtomicReference<>();
    /**
     * When the last write of the Lease naming this warden that the API server took was sent (System.nanoTime),
     * or, after a restart, when the Lease says this warden's previous run renewed it (see {@link #continued}).
     */
    private volatile long lastWriteSent;
    /** Whether {@link #lastWriteSent} says anything yet. */
    private volatile boolean everHeld;
    /** When contending began (System.nanoTime), and whether the API server has answered (or failed) a read since. */
    private volatile long contendingSince;
    private volatile boolean begun;
    private volatile boolean answered;
    private final AtomicBoolean overdue = new AtomicBoolean();
    /** Until when (System.nanoTime) this warden stays out of the election after stepping aside; 0: not aside. */
    private volatile long asideUntil;
    /** When the elector last began asking the API server about the Lease (System.nanoTime). */
    private volatile long lastAsked = System.nanoTime();
    private KubernetesClient client;
    private Thread thread;

    /**
     * @param namespace where the Lease lives; empty: the pod's own (the service account's namespace,
     *     else the kubeconfig context's)
     */
    public record Settings(String name, Optional<String> namespace, String identity, Duration duration,
            Duration renewDeadline, Duration retryPeriod) {

        /** From {@code warden.gate.lease.*}; the identity defaults to {@code $POD_NAME}, else the host name. */
        public static Settings of(WardenConfig.Gate.Lease lease, Map<String, String> env) {
            String identity = lease.identity().or(() -> Optional.ofNullable(env.get("POD_NAME")).filter(s -> !s.isBlank()))
                    .orElseGet(LeaseElection::hostName);
            return new Settings(lease.name(), lease.namespace(), identity, lease.duration(), lease.renewDeadline(),
                    lease.retryPeriod());
        }
    }

    public LeaseElection(Settings settings) {
        this.settings = settings;
    }

    /**
     * Whether this warden holds the Lease: the elector says so, and the last write of it that the API server
     * took was sent within the renew deadline. The second half is warden's own clock: fabric8 notices a
     * missed deadline only after the renewal in flight times out and its next retry comes round (13 s for a
     * 10 s deadline, measured), while anyone else's view of the Lease ends no sooner than a Lease duration
     * after that write was sent.
     */
    @Override
    public boolean leading() {
        if (!leading.get()) {
            return false;
        }
        if (System.nanoTime() - lastWriteSent < settings.renewDeadline().toNanos()) {
            overdue.set(false);
            return true;
        }
        if (!overdue.getAndSet(true) && everHeld) {
            LOG.warnf("Stepped down: the Lease %s was not renewed within %d s", settings.name(),
                    settings.renewDeadline().toSeconds());
        }
        return false;
    }

    /** The first read of the Lease was answered (or failed), or took longer than a request may. */
    @Override
    public boolean decided() {
        return !begun || answered || System.nanoTime() - contendingSince > settings.retryPeriod().toNanos();
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
        return Optional.ofNullable(holder.get());
    }

    @Override
    public Optional<Instant> renewed() {
        return Optional.ofNullable(renewed.get());
    }

    private void seen(LeaderElectionRecord record) {
        if (record != null && record.getRenewTime() != null) {
            renewed.set(record.getRenewTime().toInstant());
        }
    }

    /**
     * How long the elector has gone without asking the API server anything, once that is longer than
     * {@code patience} and than a working elector ever goes (it asks every retry period or so, unanswered
     * requests time out after one, and it starts again a retry period after it ends): empty while it works.
     * An elector that stopped without ending would leave this warden out of the election until it restarts.
     */
    @Override
    public Optional<Duration> stalled(Duration patience) {
        Duration silent = Duration.ofNanos(System.nanoTime() - lastAsked);
        Duration working = settings.retryPeriod().multipliedBy(5);
        Duration bound = patience.compareTo(working) > 0 ? patience : working;
        return stopped.get() || silent.compareTo(bound) <= 0 ? Optional.empty() : Optional.of(silent);
    }

    /** Starts contending on a thread of its own; {@code node} only names where this warden runs in the log. */
    public synchronized void start(Optional<String> node) {
        Config config = KubernetesAccess.config(System.getenv(), KubernetesAccess.SERVICE_ACCOUNT);
        int timeout = (int) settings.retryPeriod().toMillis();
        config.setRequestTimeout(timeout);
        config.setConnectionTimeout(timeout);
        config.setRequestRetryBackoffLimit(0);
        String namespace = settings.namespace().orElse(Optional.ofNullable(config.getNamespace()).orElse("default"));
        // The JDK's HTTP client, named rather than found through a ServiceLoader (the native executable registers none).
        client = new KubernetesClientBuilder().withConfig(config).withHttpClientFactory(new JdkHttpClientFactory()).build();
        LOG.infof("Contending for Lease %s/%s as %s%s (lease %d s, renew deadline %d s, retry %d s)", namespace,
                settings.name(), settings.identity(), node.map(n -> " on node " + n).orElse(""),
                settings.duration().toSeconds(), settings.renewDeadline().toSeconds(), settings.retryPeriod().toSeconds());
        contendingSince = System.nanoTime();
        begun = true;
        thread = Thread.ofPlatform().daemon().name("warden-lease").start(() -> contend(namespace));
    }

    private void contend(String namespace) {
        while (!stopped.get()) {
            LeaseLock lock = new LeaseLock(namespace, settings.name(), settings.identity());
            CompletableFuture<?> elector = client.leaderElector().withConfig(electionConfig(lock)).build().start();
            running.set(elector);
            if (stopped.get()) {
                elector.cancel(true);
            }
            try {
                elector.join();
            } catch (RuntimeException e) {
                if (!stopped.get() && asideUntil == 0) {
                    LOG.warnf("The Lease election ended (%s); contending again", e.getMessage());
                }
            }
            // A renewal failed past the deadline (stepped down), the elector gave up, or this warden stepped aside.
            leading.set(false);
            pause(settings.retryPeriod());
            long aside = asideUntil - System.nanoTime();
            if (asideUntil != 0 && aside > 0) {
                pause(Duration.ofNanos(aside));
            }
            asideUntil = 0;
        }
    }

    /**
     * Releases the Lease (fabric8 releases it when its elector is cancelled) and stays out for three retry periods,
     * longer than another contender's jittered retry (up to 2.2 retry periods), so that one takes it.
     */
    @Override
    public void stepAside() {
        Duration aside = settings.retryPeriod().multipliedBy(3);
        asideUntil = System.nanoTime() + aside.toNanos();
        leading.set(false);
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
     * The elector's lock, timed: when the elector last began asking the API server anything (whatever the
     * answer), and when the last write naming this warden that the API server took was sent.
     */
    private final class Timed implements Lock {
        private final Lock lock;

        Timed(Lock lock) {
            this.lock = lock;
        }

        @Override
        public LeaderElectionRecord get(KubernetesClient kubernetes) {
            lastAsked = System.nanoTime();
            try {
                LeaderElectionRecord record = lock.get(kubernetes);
                seen(record);
                continued(record);
                return record;
            } finally {
                answered = true;
            }
        }

        @Override
        public void create(KubernetesClient kubernetes, LeaderElectionRecord record) {
            long sent = lastAsked = System.nanoTime();
            lock.create(kubernetes, record);
            accepted(record, sent);
        }

        @Override
        public void update(KubernetesClient kubernetes, LeaderElectionRecord record) {
            long sent = lastAsked = System.nanoTime();
            lock.update(kubernetes, record);
            accepted(record, sent);
        }

        private void accepted(LeaderElectionRecord record, long sent) {
            seen(record);
            if (settings.identity().equals(record.getHolderIdentity())) {
                lastWriteSent = sent;
                everHeld = true;
            }
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

    /**
     * A warden restarted in its pod (same identity, same node, so the same clock) that finds the Lease naming it,
     * renewed within the renew deadline, goes on from that renewal as if it were its own: it leads (its pod's
     * lilbee is kept, not fenced) until the renew deadline counted from there, by which fabric8 has renewed
     * the Lease (a holder renews at once) or it steps down as any leader does, in time for the fence.
     */
    private void continued(LeaderElectionRecord record) {
        if (everHeld || record == null || record.getRenewTime() == null
                || !settings.identity().equals(record.getHolderIdentity())) {
            return;
        }
        Duration age = Duration.between(record.getRenewTime().toInstant(), Instant.now());
        if (!age.isNegative() && age.compareTo(settings.renewDeadline()) < 0) {
            lastWriteSent = System.nanoTime() - age.toNanos();
            everHeld = true;
            LOG.infof("The Lease %s still names %s, renewed %d ms ago: going on from there", settings.name(),
                    settings.identity(), age.toMillis());
        }
    }

    private void startedLeading() {
        leading.set(true);
        holder.set(settings.identity());
        LOG.infof("Holding the Lease %s as %s", settings.name(), settings.identity());
    }

    private void stoppedLeading() {
        if (leading.getAndSet(false) && !overdue.get()) {
            LOG.warnf("Stepped down: the Lease %s was not renewed within %d s", settings.name(),
                    settings.renewDeadline().toSeconds());
        }
    }

    /** {@code identity} is null when the Lease was released: it names no holder until someone takes it. */
    private void newLeader(String identity) {
        String before = holder.getAndSet(identity);
        if (identity != null && !identity.equals(before) && !identity.equals(settings.identity())) {
            LOG.infof("The Lease %s is held by %s", settings.name(), identity);
        }
    }

    /** Steps down (releasing the Lease, so the next warden need not wait for it to expire) and stops. */
    @Override
    public void close() {
        stopped.set(true);
        CompletableFuture<?> elector = running.get();
        if (elector != null) {
            elector.cancel(true);
        }
        leading.set(false);
        Thread contender = thread;
        if (contender != null) {
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
