package dev.warden.testing;

import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.discovery.v1.Endpoint;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * Watches one workload's pods and one Service's EndpointSlices, as the API server tells them, and keeps
 * every sample: after each event, which pods serve (Ready; with role routing, Ready and routed to) and
 * which are ready endpoints (those kube-proxy sends clients to; a terminating endpoint still serving is only its
 * fallback while none is ready). A pod counts while it exists and is not being deleted; pods on a node the test
 * has lost are left out (the API server keeps them Ready until the node controller marks the node unreachable).
 */
public final class ServingWatch implements AutoCloseable {

    /** One sample: when (nanoTime), the pods serving and the pods the EndpointSlices call ready. */
    public record Sample(long at, Set<String> serving, Set<String> endpoints) {
    }

    /** A pod that serves when clients are routed by readiness: Ready. */
    public static final Predicate<Pod> READY = pod -> pod.getStatus() != null && pod.getStatus().getConditions() != null
            && pod.getStatus().getConditions().stream().anyMatch(c -> "Ready".equals(c.getType()) && "True".equals(c.getStatus()));


    private final Map<String, Pod> pods = new ConcurrentHashMap<>();
    private final Map<String, String> everSeen = new ConcurrentHashMap<>();
    private final Map<String, EndpointSlice> slices = new ConcurrentHashMap<>();
    private final Map<String, Integer> exits = new java.util.HashMap<>();
    private final Set<String> lostNodes = ConcurrentHashMap.newKeySet();
    private final List<Sample> samples = new ArrayList<>();
    private final SharedIndexInformer<Pod> podInformer;
    private final SharedIndexInformer<EndpointSlice> sliceInformer;
    private final Predicate<Pod> serves;
    /** Role routing: a pod serves only while the Service's endpoints name it too (every healthy pod is Ready). */
    private final boolean routed;

    /**
     * The pods {@code selector} (label=value) picks in {@code namespace}, {@code serves} telling those that serve, and
     * the EndpointSlices of {@code service}.
     */
    public ServingWatch(KubernetesClient client, String namespace, String selector, Predicate<Pod> serves, String service) {
        this(client, namespace, selector, serves, false, service);
    }

    /** The same; {@code routed}: a pod serves only while it is a ready endpoint too (role routing). */
    public ServingWatch(KubernetesClient client, String namespace, String selector, Predicate<Pod> serves, boolean routed,
            String service) {
        this.serves = serves;
        this.routed = routed;
        String[] label = selector.split("=", 2);
        podInformer = client.pods().inNamespace(namespace).withLabel(label[0], label[1]).inform(handler(this::put,
                p -> pods.remove(p.getMetadata().getName())));
        sliceInformer = client.resources(EndpointSlice.class).inNamespace(namespace)
                .withLabel("kubernetes.io/service-name", service)
                .inform(handler(s -> slices.put(s.getMetadata().getName(), s), s -> slices.remove(s.getMetadata().getName())));
    }

    private <T> ResourceEventHandler<T> handler(Consumer<T> put, Consumer<T> remove) {
        return new ResourceEventHandler<>() {
            @Override
            public void onAdd(T object) {
                put.accept(object);
                sample();
            }

            @Override
            public void onUpdate(T old, T object) {
                put.accept(object);
                sample();
            }

            @Override
            public void onDelete(T object, boolean unknownFinalState) {
                remove.accept(object);
                sample();
            }
        };
    }

    /** Keeps the pod, counting each container restart by the exit code it restarted after. */
    private synchronized void put(Pod pod) {
        Pod before = pods.put(pod.getMetadata().getName(), pod);
        everSeen.put(pod.getMetadata().getUid(), pod.getMetadata().getName());
        Map<String, Integer> restarts = new java.util.HashMap<>();
        if (before != null && before.getStatus() != null) {
            before.getStatus().getContainerStatuses().forEach(c -> restarts.put(c.getName(), c.getRestartCount()));
        }
        if (pod.getStatus() != null) {
            for (ContainerStatus container : pod.getStatus().getContainerStatuses()) {
                if (container.getRestartCount() > restarts.getOrDefault(container.getName(), 0) && container.getLastState() != null
                        && container.getLastState().getTerminated() != null) {
                    exits.merge(container.getName() + ":" + container.getLastState().getTerminated().getExitCode(), 1, Integer::sum);
                }
            }
        }
    }

    /** How many times a container named {@code container} restarted after exiting with {@code code}, as seen. */
    public synchronized int exits(String container, int code) {
        return exits.getOrDefault(container + ":" + code, 0);
    }

    private synchronized void sample() {
        samples.add(new Sample(System.nanoTime(), serving(), endpoints()));
    }

    /** Pods on {@code node} are no longer counted from now on. */
    public synchronized void lose(String node) {
        lostNodes.add(node);
        sample();
    }

    /** The pods serving now. */
    public synchronized Set<String> serving() {
        Set<String> serving = pods(serves);
        if (routed) {
            serving.retainAll(endpoints());
        }
        return serving;
    }

    /** The pods Ready now (with role routing, the standbys too). */
    public synchronized Set<String> ready() {
        return pods(READY);
    }

    private Set<String> pods(Predicate<Pod> which) {
        Set<String> found = new TreeSet<>();
        for (Pod pod : pods.values()) {
            if (counted(pod) && which.test(pod)) {
                found.add(pod.getMetadata().getName());
            }
        }
        return found;
    }

    /** The pods the EndpointSlices call ready now. */
    public synchronized Set<String> endpoints() {
        Set<String> ready = new TreeSet<>();
        for (EndpointSlice slice : slices.values()) {
            for (Endpoint endpoint : Optional.ofNullable(slice.getEndpoints()).orElse(List.of())) {
                if (endpoint.getConditions() != null && Boolean.TRUE.equals(endpoint.getConditions().getReady())
                        && endpoint.getTargetRef() != null && !lostNodes.contains(String.valueOf(endpoint.getNodeName()))) {
                    ready.add(endpoint.getTargetRef().getName());
                }
            }
        }
        return ready;
    }

    private boolean counted(Pod pod) {
        return pod.getMetadata().getDeletionTimestamp() == null
                && (pod.getSpec() == null || !lostNodes.contains(String.valueOf(pod.getSpec().getNodeName())));
    }

    /** Every pod seen since the watch began, deleted ones too, by UID. */
    public Map<String, String> everSeen() {
        return Map.copyOf(everSeen);
    }

    /** The pods as last seen, by name. */
    public Map<String, Pod> pods() {
        return Map.copyOf(pods);
    }

    /** Every sample with more than one pod serving or more than one ready endpoint. */
    public synchronized List<Sample> overlaps() {
        return samples.stream().filter(s -> s.serving().size() > 1 || s.endpoints().size() > 1).toList();
    }

    /** How many samples were taken. */
    public synchronized int size() {
        return samples.size();
    }

    /**
     * The first time at or after {@code since} (nanoTime) that a pod other than {@code not} (null: any pod)
     * served and was the ready endpoint; empty while none was.
     */
    public synchronized Optional<Long> firstServing(long since, String not) {
        return samples.stream().filter(s -> s.at() >= since)
                .filter(s -> s.serving().stream().anyMatch(p -> !p.equals(not)) && s.endpoints().stream().anyMatch(p -> !p.equals(not)))
                .filter(s -> s.serving().equals(s.endpoints()))
                .map(Sample::at).findFirst();
    }

    /** The first time at or after {@code since} (nanoTime) that {@code pod} did not serve or was not a ready endpoint. */
    public synchronized Optional<Long> firstWithout(long since, String pod) {
        return samples.stream().filter(s -> s.at() >= since)
                .filter(s -> !s.serving().contains(pod) || !s.endpoints().contains(pod)).map(Sample::at).findFirst();
    }

    @Override
    public void close() {
        podInformer.close();
        sliceInformer.close();
    }
}
