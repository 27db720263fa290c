package dev.warden.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.Await;
import dev.warden.testing.Command;
import dev.warden.testing.InteropTools;
import dev.warden.testing.KubeletCluster;
import dev.warden.testing.Kubectl;
import dev.warden.testing.ServingWatch;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The chart as a user installs it, on a real cluster of two real kubelets ({@link KubeletCluster}), with
 * warden's image, the real llama-swap's and the reference lilbee image: each mode installed with helm into a
 * namespace PodSecurity holds to {@code restricted}; at every event the API server sends, at most one pod
 * Ready and at most one ready endpoint; the standby's main container never started; failover when the
 * serving pod is deleted, when its warden is SIGKILLed or stalled, when its node is lost; {@code helm upgrade}
 * rolling to new pods; {@code kubectl drain} of the serving node failing over; {@code helm test}.
 * Runs with {@code -Pinterop -Dinterop.control-plane=DIR -Dinterop.node-images=DIR -Dinterop.helm=HELM}.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class KubeletInteropIT {

    private static final String RELEASE = "w";
    private static final String FULLNAME = "w-warden";
    private static final String NODE1 = "warden-node";
    private static final String NODE2 = "warden-node2";
    /** A pod deleted or a warden killed: the standby polls the lock every 50 ms; the rest is the kubelet's probes and lilbee's start. */
    private static final Duration FAILOVER = Duration.ofSeconds(30);

    private static KubeletCluster cluster;
    private static String helm;

    @BeforeAll
    static void cluster() throws Exception {
        Path tools = Path.of(InteropTools.path("control-plane"));
        Path images = Path.of(InteropTools.path("node-images"));
        helm = InteropTools.path("helm");
        cluster = KubeletCluster.start(tools, images, Path.of("target/kubelet-cluster").toAbsolutePath(), 2);
    }

    @AfterAll
    static void stopTheCluster() throws Exception {
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    @Order(1)
    void holdModeServesFromOnePodAndFailsOverWhenItIsDeletedItsWardenDiesOrStalls() throws Exception {
        try (Release release = Release.install("hold", List.of(), NODE1)) {
            release.oneServingAndTheStandbysMainContainerNeverStarted("llama-swap");
            release.failover("force-delete", release::forceDelete);
            // Only warden's container dies: the kubelet restarts it in place, the pod's llama-swap goes on.
            String before = release.servingPod();
            release.failover("SIGKILL warden", pod -> release.kill(pod, "warden", "KILL"));
            Pod old = release.pod(before);
            assertEquals(0, status(old, "llama-swap").getRestartCount(), "llama-swap kept running");
            assertTrue(status(old, "llama-swap").getState().getRunning() != null, "llama-swap kept running");
            Await.until("the killed warden is back, standing by", Duration.ofSeconds(60), () -> {
                ContainerStatus warden = status(release.pod(before), "warden");
                return warden.getRestartCount() == 1 && warden.getState().getRunning() != null && !Boolean.TRUE.equals(warden.getStarted());
            });
            // Stalled: readiness fails at once, liveness restarts it after three failed probes, and the standby takes over.
            String stalled = release.servingPod();
            int restarts = status(release.pod(stalled), "warden").getRestartCount();
            release.failover("SIGSTOP warden", pod -> release.kill(pod, "warden", "STOP"));
            Await.until("liveness restarted the stalled warden", Duration.ofSeconds(30),
                    () -> status(release.pod(stalled), "warden").getRestartCount() > restarts);
            // Only llama-swap dies: the kubelet restarts it in place; the same pod serves again.
            release.recovers("SIGKILL llama-swap only", release.servingPod(), "llama-swap");
            release.upgradeRollsToNewPods();
            release.helmTest();
            release.noOverlap();
        }
    }

    @Test
    @Order(2)
    void gateModeStartsTheRealLilbeeInOnePodOnlyAndFailsOver() throws Exception {
        try (Release release = Release.install("gate", List.of("--set", "mode=gate", "--set", "lilbee.image.repository=localhost/lilbee",
                "--set-string", "lilbee.image.tag=0.6.90b449", "--set", "lilbee.image.pullPolicy=Never"), NODE1)) {
            release.oneServingAndTheStandbysMainContainerNeverStarted("lilbee");
            release.failover("force-delete", release::forceDelete);
            // Only warden's container dies: its lilbee keeps serving and the restarted warden adopts it.
            String serving = release.servingPod();
            release.recovers("SIGKILL warden only", serving, "warden");
            assertEquals(0, status(release.pod(serving), "lilbee").getRestartCount(), "lilbee kept running");
            // Only lilbee dies: the kubelet restarts it in place; the same pod serves again.
            release.recovers("SIGKILL lilbee only", serving, "lilbee");
            release.helmTest();
            release.noOverlap();
        }
    }

    @Test
    @Order(3)
    void gateModeWithALeaseAcrossTwoNodesFailsOverOnDrainAndOnNodeLoss() throws Exception {
        List<String> lease = List.of("--set", "mode=gate", "--set", "gate.election=lease", "--set", "lilbee.image.repository=localhost/lilbee",
                "--set-string", "lilbee.image.tag=0.6.90b449", "--set", "lilbee.image.pullPolicy=Never",
                "--set-json", "affinity={\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"labelSelector\":"
                        + "{\"matchLabels\":{\"app.kubernetes.io/instance\":\"w\"}},\"topologyKey\":\"kubernetes.io/hostname\"}]}}");
        try (Release release = Release.install("gate-lease", lease, null)) {
            release.oneServingAndTheStandbysMainContainerNeverStarted("lilbee");
            // The serving node drained: the eviction fails over (no PodDisruptionBudget blocks it) and the drain completes.
            String drainedPod = release.servingPod();
            String drainedNode = release.pod(drainedPod).getSpec().getNodeName();
            long drained = System.nanoTime();
            Command.Run drain = cluster.kubectl().run(null, "drain", drainedNode, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=180s");
            assertEquals(0, drain.exitCode(), drain.output());
            Await.until("a pod on the other node serves", FAILOVER, () -> release.watch.firstServing(drained, drainedPod).isPresent());
            release.report("gate (Lease), kubectl drain of the serving node", drained, release.watch.firstServing(drained, drainedPod));
            cluster.kubectl().ok(null, "uncordon", drainedNode);
            release.steady();
            // The serving pod's node lost: nothing renews its Lease; the other node's pod is elected after the Lease expires.
            String victim = release.servingPod();
            String node = release.pod(victim).getSpec().getNodeName();
            long lost = System.nanoTime();
            release.watch.lose(node);
            cluster.loseNode(node.equals(NODE1) ? 1 : 2);
            Await.until("the other node's pod serves", Duration.ofSeconds(60), () -> release.watch.firstServing(lost, victim).isPresent());
            release.report("gate (Lease), node lost (kubelet, containerd and pods SIGKILLed)", lost, release.watch.firstServing(lost, victim));
            release.noOverlap();
        }
    }

    private static ContainerStatus status(Pod pod, String container) {
        return Stream.concat(pod.getStatus().getInitContainerStatuses().stream(), pod.getStatus().getContainerStatuses().stream())
                .filter(s -> s.getName().equals(container)).findFirst()
                .orElseThrow(() -> new AssertionError("no status of " + container + " in " + pod.getMetadata().getName()));
    }

    /** A kill of the serving pod's something, given the pod's name. */
    private interface Kill {
        void apply(String pod) throws Exception;
    }

    /** One helm release of the chart, 2 replicas on one ReadWriteMany claim, in a namespace of its own. */
    private static final class Release implements AutoCloseable {

        private final String namespace;
        private final List<String> values;
        private final ServingWatch watch;
        private final Kubectl kubectl;

        private Release(String namespace, List<String> values) {
            this.namespace = namespace;
            this.values = values;
            this.kubectl = cluster.kubectl();
            // The Deployment's pods (its selector's name label), not the helm test's.
            this.watch = new ServingWatch(cluster.client(), namespace, "app.kubernetes.io/name=warden", FULLNAME);
        }

        /** {@code node}: every pod there (file locks meet only on one kernel); null: wherever the values say. */
        static Release install(String name, List<String> modeValues, String node) throws Exception {
            Kubectl kubectl = cluster.kubectl();
            kubectl.ok(null, "create", "namespace", name);
            kubectl.ok(null, "label", "namespace", name, "pod-security.kubernetes.io/enforce=restricted",
                    "pod-security.kubernetes.io/warn=restricted");
            for (int n = 1; n <= 2; n++) {
                Path dir = Files.createDirectories(cluster.shared(n).resolve(name));
                Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwx---"));
                Command.ok(null, List.of("chown", "1001:1001", dir.toString()));
            }
            Path shared = cluster.sharedPath().resolve(name);
            kubectl.ok("""
                    apiVersion: v1
                    kind: PersistentVolume
                    metadata: {name: shared-%1$s}
                    spec:
                      capacity: {storage: 1Gi}
                      accessModes: [ReadWriteMany]
                      persistentVolumeReclaimPolicy: Retain
                      storageClassName: ""
                      claimRef: {namespace: %1$s, name: shared-lilbee}
                      hostPath: {path: %2$s, type: Directory}
                    ---
                    apiVersion: v1
                    kind: PersistentVolumeClaim
                    metadata: {name: shared-lilbee, namespace: %1$s}
                    spec:
                      accessModes: [ReadWriteMany]
                      storageClassName: ""
                      volumeName: shared-%1$s
                      resources: {requests: {storage: 1Gi}}
                    """.formatted(name, shared), "apply", "-f", "-");
            List<String> values = new ArrayList<>(List.of("--set", "replicas=2", "--set", "storage.existingClaim=shared-lilbee",
                    "--set", "storage.accessModes={ReadWriteMany}", "--set", "image.repository=localhost/warden",
                    "--set-string", "image.tag=0.1.0", "--set", "image.pullPolicy=Never", "--set", "engine.image.repository=localhost/llama-swap",
                    "--set-string", "engine.image.tag=cpu", "--set", "engine.image.pullPolicy=Never"));
            values.addAll(modeValues);
            if (node != null) {
                values.addAll(List.of("--set-string", "nodeSelector.kubernetes\\.io/hostname=" + node));
            }
            Release release = new Release(name, values);
            long started = System.nanoTime();
            release.helm("install", "--wait", "--timeout", "5m");
            Await.until("a pod of " + name + " serves", Duration.ofMinutes(5), () -> release.watch.firstServing(started, null).isPresent());
            release.report(name + ": helm install to the first pod Ready", started, release.watch.firstServing(started, null));
            return release;
        }

        String helm(String verb, String... more) throws Exception {
            List<String> command = new ArrayList<>(List.of(helm, verb, RELEASE, "helm/warden", "-n", namespace,
                    "--kubeconfig", cluster.kubectl().kubeconfig().toString()));
            command.addAll(values);
            command.addAll(List.of(more));
            return Command.ok(null, command);
        }

        Pod pod(String name) {
            return Optional.ofNullable(watch.pods().get(name)).orElseThrow(() -> new AssertionError("no pod " + name + " in " + namespace));
        }

        String servingPod() {
            Set<String> ready = watch.ready();
            assertEquals(1, ready.size(), "one pod Ready: " + ready);
            return ready.iterator().next();
        }

        /** One pod Ready and the one ready endpoint; the other's warden running and waiting; until both hold a while. */
        void steady() {
            Await.until("one pod serves and one stands by in " + namespace, Duration.ofMinutes(3), () -> {
                Set<String> ready = watch.ready();
                long standing = watch.pods().values().stream().filter(p -> p.getMetadata().getDeletionTimestamp() == null)
                        .filter(p -> !ready.contains(p.getMetadata().getName()))
                        .filter(p -> p.getStatus().getInitContainerStatuses().stream()
                                .anyMatch(s -> s.getName().equals("warden") && s.getState().getRunning() != null))
                        .count();
                return ready.size() == 1 && ready.equals(watch.endpoints()) && standing == 1;
            });
        }

        void oneServingAndTheStandbysMainContainerNeverStarted(String main) {
            steady();
            String serving = servingPod();
            for (Pod pod : watch.pods().values()) {
                if (!pod.getMetadata().getName().equals(serving)) {
                    ContainerStatus standby = status(pod, main);
                    assertNotEquals(Boolean.TRUE, standby.getStarted(), main + " started in the standby: " + standby);
                    assertTrue(standby.getState().getWaiting() != null, main + " in the standby: " + standby);
                    assertTrue(standby.getLastState() == null || standby.getLastState().getTerminated() == null, "it never ran: " + standby);
                }
            }
            assertEquals(Set.of(serving), watch.endpoints(), "only the serving pod is a ready endpoint");
        }

        void failover(String how, Kill kill) throws Exception {
            steady();
            String victim = servingPod();
            long at = System.nanoTime();
            kill.apply(victim);
            Await.until("another pod serves after " + how, FAILOVER.multipliedBy(2), () -> watch.firstServing(at, victim).isPresent());
            report(namespace + ", " + how + " of the serving pod", at, watch.firstServing(at, victim));
        }

        /**
         * {@code container} of the serving pod SIGKILLed: the kubelet restarts it in place and the same pod serves
         * again (Ready, the one ready endpoint), no other pod serving meanwhile.
         */
        void recovers(String how, String serving, String container) throws Exception {
            int restarts = status(pod(serving), container).getRestartCount();
            long at = System.nanoTime();
            kill(serving, container, "KILL");
            Await.until(container + " restarted", Duration.ofSeconds(60), () -> status(pod(serving), container).getRestartCount() > restarts);
            Await.until("the same pod serves again after " + how, Duration.ofSeconds(120),
                    () -> watch.ready().equals(Set.of(serving)) && watch.endpoints().equals(Set.of(serving))
                            && Boolean.TRUE.equals(status(pod(serving), container).getReady()));
            report(namespace + ", " + how + ": the same pod serving again", at, Optional.of(System.nanoTime()));
        }

        void forceDelete(String pod) throws Exception {
            kubectl.ok(null, "-n", namespace, "delete", "pod", pod, "--grace-period=0", "--force");
        }

        /** {@code signal} to the process of {@code container} in {@code pod}, on its node. */
        void kill(String pod, String container, String signal) throws Exception {
            Pod p = pod(pod);
            int node = p.getSpec().getNodeName().equals(NODE1) ? 1 : 2;
            long pid = cluster.containerPid(node, status(p, container).getContainerID());
            Command.ok(null, List.of("kill", "-" + signal, Long.toString(pid)));
        }

        /** A changed value rolls the Deployment to new pods; one of them serves, and never two at once. */
        void upgradeRollsToNewPods() throws Exception {
            steady();
            Set<String> before = watch.pods().keySet();
            long at = System.nanoTime();
            helm("upgrade", "--wait", "--timeout", "5m", "--set", "podAnnotations.rolled=yes");
            Await.until("a new pod serves", Duration.ofMinutes(3), () -> watch.ready().stream().anyMatch(p -> !before.contains(p)));
            report(namespace + ", helm upgrade (a changed value) to a new pod Ready", at,
                    watch.firstServing(at, null).filter(t -> watch.ready().stream().noneMatch(before::contains)));
            steady();
        }

        void helmTest() throws Exception {
            String out = Command.ok(null, List.of(helm, "test", RELEASE, "-n", namespace, "--kubeconfig",
                    cluster.kubectl().kubeconfig().toString(), "--logs", "--timeout", "2m"));
            assertTrue(out.contains("Succeeded"), out);
        }

        void noOverlap() {
            assertEquals(List.of(), watch.overlaps(), "two pods served at once (" + watch.size() + " samples)");
        }

        void report(String what, long from, Optional<Long> to) {
            System.out.printf("KUBELET %s: %s%n", what, to.map(t -> String.format("%.2f s", (t - from) / 1e9)).orElse("never"));
        }

        /** Uninstalls; pods a lost node can no longer confirm gone are deleted by force. */
        @Override
        public void close() throws IOException, InterruptedException {
            watch.close();
            Command.run(null, List.of(helm, "uninstall", RELEASE, "-n", namespace, "--kubeconfig",
                    cluster.kubectl().kubeconfig().toString(), "--wait", "--timeout", "90s"));
            kubectl.run(null, "-n", namespace, "delete", "pods", "--all", "--grace-period=0", "--force");
            kubectl.run(null, "delete", "namespace", namespace, "--wait=true", "--timeout=90s");
            kubectl.run(null, "delete", "pv", "shared-" + namespace, "--ignore-not-found", "--wait=false");
        }
    }
}
