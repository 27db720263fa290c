package dev.warden.deploy;

import static dev.warden.testing.ClusterRelease.status;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.Await;
import dev.warden.testing.ClusterRelease;
import dev.warden.testing.Command;
import dev.warden.testing.InteropTools;
import dev.warden.testing.KubeletCluster;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.io.TempDir;

/**
 * The chart as a user installs it, on a real cluster of two real kubelets ({@link KubeletCluster}), with
 * warden's image, the real llama-swap's and the reference lilbee image: each mode installed with helm into a
 * namespace PodSecurity holds to {@code restricted}; at every event the API server sends, at most one pod
 * Ready and at most one ready endpoint; the standby's llama-swap, or its lilbee, never started; failover when the
 * serving pod is deleted, when its warden is SIGKILLed or stalled, when its node is lost; {@code helm upgrade}
 * rolling to new pods; {@code kubectl drain} of the serving node failing over; {@code helm test}; gate mode routed by
 * role, healthy to the everyday tools (helm's wait, {@code kubectl rollout status}, kstatus) with one endpoint throughout. Each time
 * is printed ({@code KUBELET ...}); docs/BENCHMARKS.md's figure 11 is KubeletFailoverBench's, over many rounds.
 * Runs with {@code -Pinterop -Dinterop.control-plane=DIR -Dinterop.node-images=DIR -Dinterop.helm=HELM}; with
 * {@code -Dinterop.warden-flavour=native} the chart runs the native image ({@code image.flavour=native}).
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class KubeletInteropIT {

    private static final String NODE1 = ClusterRelease.NODE1;
    /** Role routing: the serving pod deleted or force-deleted, in turn, this many times. */
    private static final int FAILOVERS = Integer.getInteger("warden.kubelet.failovers", 20);
    /** Role routing: then this many switchovers, warden step-down in the serving pod. */
    private static final int SWITCHOVERS = 5;

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
        try (ClusterRelease release = ClusterRelease.helm(cluster, helm, "hold", List.of(), NODE1)) {
            report("hold: helm install to the first pod Ready", release.installed());
            release.oneServingAndTheStandbysMainContainerNeverStarted("llama-swap");
            // The real engine: the serving pod's llama-swap runs the real llama-server on the image's model; deleting
            // the pod stops it (the kubelet's SIGTERM to llama-swap, which stops its server), and the pod serving next
            // loads its own.
            ProcessHandle server = release.loadModel(release.servingPod());
            report("hold, force-delete of the serving pod", release.failover("force-delete", release::forceDelete));
            Await.until("the deleted pod's llama-server is gone", Duration.ofSeconds(60), () -> !server.isAlive());
            assertTrue(release.loadModel(release.servingPod()).isAlive(), "the new serving pod's llama-server runs");
            // Only warden's container dies: the kubelet restarts it in place, the pod's llama-swap goes on.
            String before = release.servingPod();
            release.tolerateStaleReady(before, Duration.ofSeconds(2));
            report("hold, SIGKILL warden of the serving pod", release.failover("SIGKILL warden", pod -> release.kill(pod, "warden", "KILL")));
            assertEquals(0, status(release.pod(before), "llama-swap").getRestartCount(), "llama-swap kept running");
            assertTrue(status(release.pod(before), "llama-swap").getState().getRunning() != null, "llama-swap kept running");
            Await.until("the killed warden is back, standing by", Duration.ofSeconds(60), () -> {
                ContainerStatus warden = status(release.pod(before), "warden");
                return warden.getRestartCount() == 1 && warden.getState().getRunning() != null && !Boolean.TRUE.equals(warden.getStarted());
            });
            // Stalled: readiness fails at once, liveness restarts it after three failed probes, and the standby takes over.
            String stalled = release.servingPod();
            int restarts = status(release.pod(stalled), "warden").getRestartCount();
            report("hold, SIGSTOP warden of the serving pod", release.failover("SIGSTOP warden", pod -> release.kill(pod, "warden", "STOP")));
            Await.until("liveness restarted the stalled warden", Duration.ofSeconds(30),
                    () -> status(release.pod(stalled), "warden").getRestartCount() > restarts);
            // Only llama-swap dies: the kubelet restarts it in place; the same pod serves again.
            report("hold, SIGKILL llama-swap only: the same pod serving again",
                    release.recovers("SIGKILL llama-swap only", release.servingPod(), "llama-swap"));
            report("hold, helm upgrade (a changed value) to a new pod Ready", release.upgradeRollsToNewPods());
            release.helmTest();
            release.noOverlap();
        }
    }

    @Test
    @Order(2)
    void gateModeStartsTheRealLilbeeInOnePodOnlyAndFailsOver() throws Exception {
        try (ClusterRelease release = ClusterRelease.helm(cluster, helm, "gate", ClusterRelease.GATE, NODE1)) {
            report("gate: helm install to the first pod Ready", release.installed());
            release.oneServingAndTheStandbysLilbeeNeverStarted();
            report("gate, force-delete of the serving pod", release.failover("force-delete", release::forceDelete));
            // Only warden's container dies: its lilbee keeps serving and the restarted warden adopts it.
            String serving = release.servingPod();
            report("gate, SIGKILL warden only: the same pod serving again", release.recovers("SIGKILL warden only", serving, "warden"));
            assertEquals(0, status(release.pod(serving), "lilbee").getRestartCount(),
                    () -> "lilbee kept running: " + release.restartsOf(serving, "lilbee"));
            // lilbee's process dies (a crash, the OOM killer), twice: its supervisor starts it again on warden's next
            // word, with no kubelet back-off, and the same pod serves again.
            report("gate, SIGKILL lilbee: started again in the same pod", release.lilbeeStartedAgainInPod("SIGKILL lilbee", serving));
            report("gate, SIGKILL lilbee again: started again in the same pod", release.lilbeeStartedAgainInPod("SIGKILL lilbee again", serving));
            // Its whole container dies twice: restarted in place at once, then only after the kubelet's back-off, meanwhile
            // its warden hands the gate over.
            report("gate, SIGKILL lilbee's container: the same pod serving again", release.recovers("SIGKILL lilbee's container", serving, "lilbee"));
            report("gate, SIGKILL lilbee's container again (kubelet back-off): the standby serves", release.failover(
                    "SIGKILL lilbee's container in back-off", pod -> release.kill(pod, "lilbee", "KILL")));
            // The serving pod's warden kept down (its second crash: the kubelet's back-off, 10 s) across a real lilbee
            // reset: lilbee serves on the deleted lock where the standby cannot see it, and no warden renews its permit.
            // Its supervisor stops it when the permit runs out, before the standby's settle lets another lilbee start
            // (noOverlap below); the kubelet restarts nothing of lilbee's. Either pod may serve after.
            String keptDown = release.servingPod();
            report("gate, SIGKILL warden only, again: the same pod serving again", release.recovers("SIGKILL warden only", keptDown, "warden"));
            int lilbeeRestarts = status(release.pod(keptDown), "lilbee").getRestartCount();
            ProcessHandle unrenewed = release.lilbeeOf(keptDown);
            report("gate, warden kept down across a lilbee reset: a pod serves again", release.servesAgain(pod -> {
                release.kill(pod, "warden", "KILL");
                release.lilbeeReset(pod);
            }));
            Await.until("the supervisor stopped the lilbee whose permit no warden renewed", Duration.ofSeconds(30),
                    () -> !unrenewed.isAlive());
            assertEquals(lilbeeRestarts, status(release.pod(keptDown), "lilbee").getRestartCount(),
                    () -> "the kubelet restarted lilbee: " + release.restartsOf(keptDown, "lilbee"));
            release.helmTest();
            release.noOverlap();
            // Routed by readiness, a standby is never Ready: the everyday tools call the release unhealthy (docs/deploying.md).
            Command.Run tools = release.everydayTools(Duration.ofSeconds(1));
            assertNotEquals(0, tools.exitCode(), tools.output());
            assertTrue(tools.output().contains("Deployment/" + ClusterRelease.FULLNAME + ": InProgress"), tools.output());
        }
    }

    /**
     * Routed by role: helm's wait returns once both pods are Ready (the chart's maxUnavailable 0 asks for every replica),
     * kubectl rollout status and kstatus call the release healthy, and through 20 failovers ({@code -Dwarden.kubelet.failovers}), the serving
     * pod deleted (its supervisor, SIGTERMed, asks its warden to step down: out of the Endpoints before lilbee stops) or
     * force-deleted (gone at once: the next serving warden's first write replaces it), the serving pod's warden
     * SIGKILLed (restarted in place, given the gate back, the same pod routed to throughout), {@value #SWITCHOVERS}
     * switchovers ({@code warden step-down}) and an upgrade, the Service's Endpoints (as kube-proxy reads them, the
     * EndpointSlices mirrored from what warden writes) never named two pods.
     */
    @Test
    @Order(3)
    void gateModeRoutedByRoleIsHealthyToEverydayToolsWithOneEndpointThroughFailoversAndSwitchovers() throws Exception {
        try (ClusterRelease release = ClusterRelease.helm(cluster, helm, "gate-role", ClusterRelease.GATE_ROLE, NODE1)) {
            report("gate (role): helm install --wait to the first pod serving", release.installed());
            release.oneServingAndTheStandbysLilbeeNeverStarted();
            healthy(release);
            List<Duration> deleted = new ArrayList<>();
            List<Duration> forced = new ArrayList<>();
            for (int round = 0; round < FAILOVERS; round++) {
                if (round % 2 == 0) {
                    deleted.add(release.failover("delete", release::delete));
                } else {
                    forced.add(release.failover("force-delete", release::forceDelete));
                }
            }
            // Each round's standby is the pod the round before made, Ready (routable) once it has watched the gate file for
            // the settle, so that, elected, its lilbee starts at once.
            report("gate (role), delete of the serving pod, median of " + deleted.size(), median(deleted));
            report("gate (role), force-delete of the serving pod, median of " + forced.size(), median(forced));
            String serving = release.servingPod();
            report("gate (role), SIGKILL warden only: the same pod serving again",
                    release.recovers("SIGKILL warden only", serving, "warden"));
            // Switchovers: the serving pod hands over on purpose and stands by again, warm.
            List<Duration> switched = new ArrayList<>();
            for (int round = 0; round < SWITCHOVERS; round++) {
                switched.add(release.failover("warden step-down", release::stepDown));
            }
            report("gate (role), warden step-down to the standby serving, median of " + switched.size(), median(switched));
            // What happened, as Events on the pods (the chart's Role lets warden create them, nothing more).
            Await.until("warden's Events", Duration.ofSeconds(30),
                    () -> release.wardenEvents().containsAll(Set.of("Elected", "Serving", "SteppedDown")));
            release.oneServingAndTheStandbysLilbeeNeverStarted();
            report("gate (role), helm upgrade --wait to a new pod serving", release.upgradeRollsToNewPods());
            healthy(release);
            release.helmTest();
            release.noOverlap();
        }
    }

    private static void healthy(ClusterRelease release) throws Exception {
        Command.Run tools = release.everydayTools(Duration.ofSeconds(60));
        System.out.println(tools.output());
        assertEquals(0, tools.exitCode(), tools.output());
    }

    private static Duration median(List<Duration> took) {
        return took.stream().sorted().toList().get(took.size() / 2);
    }

    /**
     * What warden cannot prevent and its alerts must catch: the file election on two nodes whose shared volume shows each
     * node its own files (a ReadWriteMany claim whose locks do not reach across nodes). Each pod is elected, and both
     * serve; the chart's WardenSplitBrain expression, evaluated by promtool over the two pods' real metrics, says so.
     */
    @Test
    @Order(4)
    void theFileElectionAcrossTwoIsolatedNodesIsASplitBrainThatTheAlertCounts(@TempDir Path dir) throws Exception {
        Path spread = Files.writeString(dir.resolve("spread.yaml"), """
                affinity:
                  podAntiAffinity:
                    requiredDuringSchedulingIgnoredDuringExecution:
                      - labelSelector: {matchLabels: {app.kubernetes.io/instance: w}}
                        topologyKey: kubernetes.io/hostname
                """);
        List<String> values = new ArrayList<>(ClusterRelease.GATE);
        values.addAll(List.of("-f", spread.toString()));
        try (ClusterRelease release = ClusterRelease.helm(cluster, helm, "split", values, null)) {
            Await.until("both pods serve", Duration.ofMinutes(3), () -> release.watch().serving().size() == 2);
            Map<String, String> scrapes = new TreeMap<>();
            for (String pod : release.watch().serving()) {
                scrapes.put(pod, release.metrics(pod));
            }
            String dataDir = "/var/lib/lilbee/data";
            String expr = AlertRulesInteropIT.expression("split", "WardenSplitBrain");
            Command.Run evaluated = AlertRulesInteropIT.evaluate(dir, "split", scrapes, expr, Map.of(
                    AlertRulesInteropIT.labels(new TreeMap<>(Map.of("namespace", "split", "release", "w", "data_dir", dataDir))), 2.0));
            assertEquals(0, evaluated.exitCode(), expr + "\n" + evaluated.output() + "\n" + scrapes);
        }
    }

    @Test
    @Order(5)
    void gateModeWithALeaseAcrossTwoNodesFailsOverOnDrainAndOnNodeLoss() throws Exception {
        try (ClusterRelease release = ClusterRelease.helm(cluster, helm, "gate-lease", ClusterRelease.GATE_LEASE, null)) {
            report("gate (Lease): helm install to the first pod Ready", release.installed());
            release.oneServingAndTheStandbysLilbeeNeverStarted();
            // The serving node drained: the eviction fails over (no PodDisruptionBudget blocks it) and the drain completes.
            String drainedPod = release.servingPod();
            String drainedNode = release.pod(drainedPod).getSpec().getNodeName();
            long drained = System.nanoTime();
            Command.Run drain = cluster.kubectl().run(null, "drain", drainedNode, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=180s");
            assertEquals(0, drain.exitCode(), drain.output());
            Await.until("a pod on the other node serves", Duration.ofMinutes(2),
                    () -> release.watch().firstServing(drained, drainedPod).isPresent());
            report("gate (Lease), kubectl drain of the serving node",
                    Duration.ofNanos(release.watch().firstServing(drained, drainedPod).orElseThrow() - drained));
            cluster.kubectl().ok(null, "uncordon", drainedNode);
            release.steady();
            // Only the serving warden dies: restarted in place under the same identity, it finds its Lease renewed by
            // its previous run and goes on from there; its lilbee is kept, not fenced.
            String serving = release.servingPod();
            report("gate (Lease), SIGKILL warden only: the same pod serving again", release.recovers("SIGKILL warden only", serving, "warden"));
            assertEquals(0, status(release.pod(serving), "lilbee").getRestartCount(),
                    () -> "lilbee kept running: " + release.restartsOf(serving, "lilbee"));
            // lilbee's process dies: its supervisor starts it again in the same pod. Its container dying twice: restarted in
            // place at once, then only after the kubelet's back-off, meanwhile its warden steps aside from the Lease and
            // the other node's pod serves.
            String crashing = release.servingPod();
            report("gate (Lease), SIGKILL lilbee: started again in the same pod", release.lilbeeStartedAgainInPod("SIGKILL lilbee", crashing));
            report("gate (Lease), SIGKILL lilbee's container: the same pod serving again",
                    release.recovers("SIGKILL lilbee's container", crashing, "lilbee"));
            report("gate (Lease), SIGKILL lilbee's container again (kubelet back-off): the other pod serves", release.failover(
                    "SIGKILL lilbee's container in back-off", pod -> release.kill(pod, "lilbee", "KILL")));
            // The serving warden stalled: the Lease expires for the other node long before liveness restarts it; its
            // lilbee's supervisor, its permit not renewed, stops lilbee before the other node's may start.
            String stalled = release.servingPod();
            int restarts = status(release.pod(stalled), "warden").getRestartCount();
            report("gate (Lease), SIGSTOP warden of the serving pod", release.failover("SIGSTOP warden", pod -> release.kill(pod, "warden", "STOP")));
            Await.until("liveness restarted the stalled warden", Duration.ofSeconds(60),
                    () -> status(release.pod(stalled), "warden").getRestartCount() > restarts);
            release.noOverlap();
            // The serving pod's node lost: nothing renews its Lease; the other node's pod is elected after the Lease expires.
            String victim = release.servingPod();
            String node = release.pod(victim).getSpec().getNodeName();
            long lost = System.nanoTime();
            release.watch().lose(node);
            cluster.loseNode(node.equals(NODE1) ? 1 : 2);
            Await.until("the other node's pod serves", Duration.ofMinutes(2), () -> release.watch().firstServing(lost, victim).isPresent());
            report("gate (Lease), node lost (kubelet, containerd and pods SIGKILLed)",
                    Duration.ofNanos(release.watch().firstServing(lost, victim).orElseThrow() - lost));
            release.noOverlap();
        }
    }

    private static void report(String what, Duration took) {
        System.out.printf("KUBELET %s: %.2f s%n", what, took.toNanos() / 1e9);
    }
}
