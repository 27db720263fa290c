package dev.warden.events;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.warden.kube.OwnPod;
import io.quarkus.runtime.ShutdownEvent;
import jakarta.annotation.Priority;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import org.jboss.logging.Logger;

/**
 * Kubernetes Events on warden's own pod ({@code warden.events.enabled}): what the gate and the reaper decided, where
 * {@code kubectl describe pod} and {@code kubectl get events} show it. Recorded from any thread without waiting (a
 * bounded queue, limited by {@link EventLimiter}), sent by a thread of their own through the service account mounted
 * for warden, whose Role may create events and nothing more. An Event the API server does not take is logged, never
 * retried: the log has every one of them anyway.
 */
@Singleton
public class PodEvents {

    private static final Logger LOG = Logger.getLogger(PodEvents.class);
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(2);
    /** What a stopping warden still sends: the Events of its last moments (a step-down), then no more. */
    private static final Duration LAST_WORDS = Duration.ofSeconds(1);
    private static final int QUEUE = 64;
    private static final int MAX_MESSAGE = 1024;

    private final ObjectMapper mapper;
    private final EventLimiter limiter = new EventLimiter();
    private final BlockingQueue<PodEvent> queue = new ArrayBlockingQueue<>(QUEUE);
    private volatile OwnPod pod;
    private volatile boolean stopping;
    private Thread sender;
    private long failureLoggedAt = Long.MIN_VALUE / 2;

    public PodEvents(ObjectMapper mapper) {
        this.mapper = mapper;
    }

    /**
     * Starts sending Events on this pod ({@code name}, else {@code $POD_NAME}; {@code $POD_UID}; in {@code namespace},
     * else the service account's).
     *
     * @throws IllegalArgumentException warden cannot name its pod: the message says what to set
     */
    public synchronized void start(Optional<String> name, Optional<String> namespace, Map<String, String> env) {
        pod = OwnPod.connect(name, namespace, env, REQUEST_TIMEOUT, "warden.events.enabled records Events on this pod");
        sender = Thread.ofPlatform().daemon().name("pod-events").start(this::send);
    }

    /** Records {@code event}, to be sent unless limited or the queue is full; nothing when Events are off. */
    public void record(PodEvent event) {
        if (pod != null && !stopping && limiter.admit(event, System.nanoTime()) && !queue.offer(event)) {
            LOG.debugf("Event %s not sent: the queue is full", event.reason());
        }
    }

    private void send() {
        while (true) {
            PodEvent event;
            try {
                event = stopping ? queue.poll() : queue.poll(1, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                return;
            }
            if (event == null) {
                if (stopping) {
                    return;
                }
                continue;
            }
            post(event);
        }
    }

    private void post(PodEvent event) {
        OwnPod on = pod;
        String now = DateTimeFormatter.ISO_INSTANT.format(Instant.now().truncatedTo(ChronoUnit.SECONDS));
        ObjectNode body = mapper.createObjectNode().put("apiVersion", "v1").put("kind", "Event");
        body.putObject("metadata").put("generateName", on.name() + ".").put("namespace", on.namespace());
        ObjectNode involved = body.putObject("involvedObject").put("apiVersion", "v1").put("kind", "Pod")
                .put("name", on.name()).put("namespace", on.namespace());
        on.uid().ifPresent(uid -> involved.put("uid", uid));
        String message = event.message().length() > MAX_MESSAGE ? event.message().substring(0, MAX_MESSAGE) : event.message();
        body.put("reason", event.reason()).put("message", message).put("type", event.warning() ? "Warning" : "Normal")
                .put("firstTimestamp", now).put("lastTimestamp", now).put("count", 1)
                .put("reportingComponent", "warden").put("reportingInstance", on.name());
        body.putObject("source").put("component", "warden");
        try {
            int code = on.send("POST", "/api/v1/namespaces/" + on.namespace() + "/events", "application/json", body.toString());
            if (code / 100 != 2) {
                failed(event, code == 403 ? "warden's service account may not create events in " + on.namespace()
                        + " (the chart's Role allows it, with events.enabled)" : "the API server answered " + code);
            }
        } catch (Exception e) {
            failed(event, e.getMessage());
        }
    }

    /** Logged once a minute at most: an API server out of reach must not flood the log either. */
    private void failed(PodEvent event, String why) {
        long now = System.nanoTime();
        if (now - failureLoggedAt >= Duration.ofMinutes(1).toNanos()) {
            failureLoggedAt = now;
            LOG.warnf("The Event %s on pod %s was not recorded: %s", event.reason(), pod.describe(), why);
        }
    }

    /** After the gate keeper's and the role routing's last words (they stop first), what is queued goes, briefly. */
    void onShutdown(@Observes @Priority(10_000) ShutdownEvent event) throws InterruptedException {
        Thread running;
        synchronized (this) {
            running = sender;
        }
        if (running == null) {
            return;
        }
        stopping = true;
        running.join(LAST_WORDS.toMillis());
        running.interrupt();
        pod.close();
    }
}
