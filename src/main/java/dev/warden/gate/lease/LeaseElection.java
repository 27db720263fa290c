package dev.warden.gate.lease;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.warden.config.WardenConfig;
import dev.warden.gate.GateElection;
import dev.warden.gate.Observation;
import dev.warden.kube.ApiServer;
import dev.warden.kube.KubernetesAccess;
import dev.warden.time.Moment;
import dev.warden.time.MonotonicClock;
import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.DoubleSupplier;
import org.jboss.logging.Logger;

/**
 * The gate's election through a coordination.k8s.io/v1 Lease, as client-go's leader election runs it ({@link LeaseLoop}:
 * take it, renew it every retry period, step down when no renewal has succeeded within the renew deadline, on warden's
 * own clock, see {@link #leading()}, before the Lease can expire for anyone else). Here a thread of its own drives that
 * loop against the API server, every request cut off after a retry period; the simulation drives the same loop against
 * its own ({@link #drivenBy}).
 */
public final class LeaseElection implements GateElection {

    private static final Logger LOG = Logger.getLogger(LeaseElection.class);

    private final Settings settings;
    private final MonotonicClock clock;
    private final LeaseLoop loop;
    private final Object wake = new Object();
    /** Told when a wait of the loop must end at once (stepping aside, stopping), where another than this class drives it. */
    private volatile Runnable wakeDriver = () -> { };
    private volatile LeaseStore store;
    private Thread thread;

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
        this(settings, MonotonicClock.SYSTEM, Clock.systemUTC(), () -> ThreadLocalRandom.current().nextDouble());
    }

    /**
     * @param random the jitter's draws, in [0, 1)
     */
    public LeaseElection(Settings settings, MonotonicClock clock, Clock wall, DoubleSupplier random) {
        this.settings = settings;
        this.clock = clock;
        this.loop = new LeaseLoop(settings, clock.now(), wall, random);
    }

    /** Where this warden stands, as one value. */
    LeaseState state() {
        return loop.state();
    }

    /**
     * The election as the gate sees it, from one read of its state: whether this warden leads and until when (see
     * {@link LeaseState#leadingUntil}), whether the first read has been answered (or failed) or took longer than a
     * request may, who holds the Lease and when it was last renewed.
     */
    @Override
    public Observation.Lease look() {
        Moment now = clock.now();
        LeaseState current = loop.state();
        return new Observation.Lease(settings.name(), current.decided(now, settings.retryPeriod()),
                current.leadingUntil(now, settings.renewDeadline()), current.holder(), current.renewed());
    }

    /** Whether this warden leads now. */
    public boolean leading() {
        return look().leading(clock.now());
    }

    /** Who holds the Lease, as last seen. */
    public Optional<String> holder() {
        return loop.state().holder();
    }

    @Override
    public String name() {
        return settings.name();
    }

    @Override
    public String identity() {
        return settings.identity();
    }

    /**
     * How long the elector has gone without asking the API server anything (see {@link LeaseState#stalled}); never while
     * stopped. An elector that stopped without ending would leave this warden out of the election until it restarts.
     */
    @Override
    public Optional<Duration> stalled(Duration patience) {
        return loop.stopped() ? Optional.empty() : loop.state().stalled(clock.now(), patience, settings.retryPeriod());
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
        began(store.describe(), node);
        thread = Thread.ofPlatform().daemon().name("warden-lease").start(this::contend);
    }

    /**
     * Begins without a thread: {@code driver} runs the loop returned (asks its next step, sends its requests, answers
     * them, cutting each off after a retry period), and is called whenever a wait of it must end at once. The
     * simulation's way in.
     */
    public synchronized LeaseLoop drivenBy(String where, Runnable driver) {
        wakeDriver = driver;
        began(where, Optional.empty());
        return loop;
    }

    private void began(String where, Optional<String> node) {
        LOG.infof("Contending for Lease %s as %s%s (lease %d s, renew deadline %d s, retry %d s)", where,
                settings.identity(), node.map(n -> " on node " + n).orElse(""), settings.duration().toSeconds(),
                settings.renewDeadline().toSeconds(), settings.retryPeriod().toSeconds());
        loop.began(clock.now(), where);
    }

    /** The loop, driven against the API server: each request waits for its answer (the client cuts it off in time). */
    private void contend() {
        while (true) {
            switch (loop.next(clock.now())) {
                case LeaseLoop.Next.Done done -> {
                    return;
                }
                case LeaseLoop.Next.Wait wait -> pause(wait.until());
                case LeaseLoop.Next.Ask ask -> {
                    LeaseLoop.Answer answer = send(ask.request());
                    loop.answered(answer, clock.now());
                }
            }
        }
    }

    private LeaseLoop.Answer send(LeaseLoop.Request request) {
        try {
            return new LeaseLoop.Answer.Lease(switch (request) {
                case LeaseLoop.Request.Get get -> store.get();
                case LeaseLoop.Request.Create create -> Optional.of(store.create(create.record()));
                case LeaseLoop.Request.Update update -> Optional.of(store.update(update.read(), update.record()));
            });
        } catch (LeaseStore.Refused e) {
            return new LeaseLoop.Answer.Refused(e);
        } catch (IOException | RuntimeException e) {
            return new LeaseLoop.Answer.Unanswered(e.toString());
        } catch (InterruptedException e) {
            return new LeaseLoop.Answer.Unanswered("interrupted");
        }
    }

    /**
     * Releases the Lease and stays out for three retry periods, longer than another contender's jittered retry (up to
     * 2.2 retry periods), so that one takes it.
     */
    @Override
    public void stepAside() {
        Duration aside = settings.retryPeriod().multipliedBy(3);
        loop.stepAside(clock.now().plus(aside));
        wakeUp();
        LOG.infof("Stepping aside from the Lease %s for %d s", settings.name(), aside.toSeconds());
    }

    /**
     * Stops. With {@code letGo} the Lease is released (the next warden need not wait for it to expire); without, the
     * client is closed under the contending thread and the Lease expires as if this warden had died.
     */
    @Override
    public void close(boolean letGo) {
        loop.stop(letGo);
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

    private void wakeUp() {
        synchronized (wake) {
            wake.notifyAll();
        }
        wakeDriver.run();
    }

    /** Sleeps until {@code until}, or until told to stop or step aside. */
    private void pause(Moment until) {
        synchronized (wake) {
            while (loop.contending()) {
                long left = until.since(clock.now()).toMillis();
                if (left <= 0) {
                    return;
                }
                try {
                    wake.wait(left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    loop.stop(false);
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
