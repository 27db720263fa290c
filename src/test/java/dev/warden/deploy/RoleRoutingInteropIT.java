package dev.warden.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.Await;
import dev.warden.testing.Command;
import dev.warden.testing.ControlPlane;
import dev.warden.testing.Kubectl;
import dev.warden.testing.LeaseWardens;
import dev.warden.testing.WardenProcess;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.Watch;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import io.fabric8.kubernetes.client.jdkhttp.JdkHttpClientFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Role routing against a real kube-apiserver: the chart installed with {@code gate.routing=role} (and a Lease, so that
 * wardens on data roots of their own elect one), its Deployment's two pods made by the controller manager and never run
 * (no kubelet here); a warden runs here as each pod ({@code warden.gate.role.pod}) with the token of the chart's
 * ServiceAccount, so its Role is what allows the label. A watch of the pods records every change of the label, in the
 * API server's order: the serving warden's pod is primary, the other standby, never two primaries; stopped with
 * SIGTERM, the serving warden labels its pod standby before the other is labelled primary. Each records Events on its
 * own pod (elected, serving) with the chart's Role for them.
 */
class RoleRoutingInteropIT {

    private static final String NAMESPACE = "role";
    private static final String RELEASE = "r";
    private static final String LABEL = "warden.dev/role";

    private static ControlPlane plane;
    private static Path tokenConfig;
    private static List<String> pods;

    @TempDir
    Path dir;

    @BeforeAll
    static void controlPlaneAndTheChart() throws Exception {
        plane = ControlPlane.start(Path.of(KubernetesTypesInteropIT.tool("control-plane")), Files.createTempDirectory("warden-role"));
        plane.restrictedNamespace(NAMESPACE);
        Command.Run install = KubernetesTypesInteropIT.run("", KubernetesTypesInteropIT.tool("helm"), "install", RELEASE,
                "helm/warden", "-f", "helm/warden/ci/gate-role-values.yaml", "--set", "gate.election=lease",
                "--namespace", NAMESPACE, "--kubeconfig", plane.kubeconfig().toString());
        assertEquals(0, install.exitCode(), install.output());
        tokenConfig = plane.kubeconfigOf(NAMESPACE, RELEASE + "-warden-gate");
        Await.until("the Deployment's two pods", Duration.ofSeconds(60), () -> podNames().size() == 2);
        pods = podNames();
    }

    private static List<String> podNames() {
        return plane.poll("-n", NAMESPACE, "get", "pods", "-o", "jsonpath={.items[*].metadata.name}")
                .map(names -> List.of(names.trim().split("\\s+"))).filter(names -> !names.getFirst().isEmpty()).orElse(List.of());
    }

    @AfterAll
    static void stopThePlane() throws Exception {
        if (plane != null) {
            plane.close();
        }
    }

    /** The reasons of the Events warden recorded on {@code pod}, as kubectl lists them. */
    private static String events(String pod) {
        return plane.poll("-n", NAMESPACE, "get", "events", "--field-selector", "involvedObject.name=" + pod,
                "-o", "jsonpath={range .items[?(@.source.component==\"warden\")]}{.reason} {end}").orElse("");
    }

    private static String label(String pod) {
        return plane.poll("-n", NAMESPACE, "get", "pod", pod, "-o", "jsonpath={.metadata.labels.warden\\.dev/role}").orElse("");
    }

    @Test
    void theServingPodIsPrimaryAloneAndAStoppedOneIsStandbyBeforeTheOtherIsPrimary() throws Exception {
        Config admin = Config.fromKubeconfig(Files.readString(plane.kubeconfig()));
        List<String> changes = new CopyOnWriteArrayList<>();
        Map<String, String> labels = new HashMap<>();
        try (KubernetesClient client = new KubernetesClientBuilder().withConfig(admin)
                .withHttpClientFactory(new JdkHttpClientFactory()).build();
                Watch watch = client.pods().inNamespace(NAMESPACE).watch(new Watcher<Pod>() {
                    @Override
                    public void eventReceived(Action action, Pod pod) {
                        synchronized (labels) {
                            String now = pod.getMetadata().getLabels().getOrDefault(LABEL, "");
                            if (!now.equals(labels.put(pod.getMetadata().getName(), now))) {
                                changes.add(pod.getMetadata().getName() + "=" + now + " primaries="
                                        + labels.values().stream().filter("primary"::equals).count());
                            }
                        }
                    }

                    @Override
                    public void onClose(WatcherException cause) {
                    }
                });
                LeaseWardens wardens = new LeaseWardens("role", tokenConfig, dir, List.of("-Dwarden.gate.routing=role",
                        "-Dwarden.gate.lease.name=" + RELEASE + "-warden-gate", "-Dwarden.gate.lease.duration=8s",
                        "-Dwarden.gate.lease.renew-deadline=4s", "-Dwarden.gate.lease.retry-period=1s", "-Dwarden.events.enabled=true",
                        "-Dwarden.gate.supervisor.stall-bound=1s"))) {
            Map<WardenProcess, String> podOf = new HashMap<>();
            for (String pod : pods) {
                podOf.put(wardens.start(pod, "-Dwarden.gate.role.pod=" + pod), pod);
            }
            Await.until("one warden serves", Duration.ofSeconds(60), () -> wardens.theOneStarted().isPresent());
            WardenProcess leader = wardens.theOneStarted().orElseThrow();
            String primary = podOf.get(leader);
            String standby = pods.stream().filter(p -> !p.equals(primary)).findFirst().orElseThrow();
            Await.until("the serving pod labelled primary, the other standby", Duration.ofSeconds(30),
                    () -> label(primary).equals("primary") && label(standby).equals("standby"));
            assertEquals(200, leader.get("/api/v1/role", null).statusCode());
            assertTrue(leader.text("/api/v1/role").contains("\"label\":\"primary\""), leader.text("/api/v1/role"));
            WardenProcess other = podOf.entrySet().stream().filter(e -> e.getValue().equals(standby)).findFirst()
                    .orElseThrow().getKey();
            assertEquals(503, other.get("/api/v1/role", null).statusCode(), "a standby says so, with no token");
            assertEquals(0, leader.terminate(), leader.log());
            wardens.forget(leader);
            Await.until("the other pod labelled primary", Duration.ofSeconds(60), () -> label(standby).equals("primary"));
            assertEquals("standby", label(primary), "the stopped warden's pod");
            Await.until("the watch saw it", () -> changes.stream().anyMatch(c -> c.startsWith(standby + "=primary")));
            assertTrue(changes.stream().noneMatch(c -> c.endsWith("primaries=2")), "never two primaries: " + changes);
            List<String> order = new ArrayList<>(changes);
            assertTrue(order.indexOf(primary + "=standby primaries=0") >= 0
                    && order.indexOf(primary + "=standby primaries=0") < order.indexOf(standby + "=primary primaries=1"),
                    "the stopped pod was standby before the other was primary: " + order + "\n" + wardens.logs());
            // Events, recorded with the chart's Role for them (create, nothing else), on each warden's own pod.
            Await.until("the Events on the pods", Duration.ofSeconds(30), () -> events(primary).contains("Elected")
                    && events(primary).contains("Serving") && events(standby).contains("Elected"));
        }
    }

    /**
     * gate.role.admissionPolicy: the chart's ValidatingAdmissionPolicy narrows what RBAC cannot. With a token bound to
     * one pod (as the projected token in that pod is), warden's ServiceAccount may set that pod's role label to primary
     * or standby, and nothing else: not another pod's label, not another label, not an annotation, not another value;
     * and a token bound to no pod changes nothing. Another user (the admin) is not concerned.
     */
    @Test
    void theAdmissionPolicyLetsWardenChangeOnlyItsOwnPodsRoleLabel() throws Exception {
        String namespace = "role-policy";
        plane.restrictedNamespace(namespace);
        Command.Run install = KubernetesTypesInteropIT.run("", KubernetesTypesInteropIT.tool("helm"), "install", "p", "helm/warden",
                "-f", "helm/warden/ci/gate-role-values.yaml", "--set", "gate.role.admissionPolicy=true", "--namespace", namespace,
                "--kubeconfig", plane.kubeconfig().toString());
        assertEquals(0, install.exitCode(), install.output());
        Await.until("the Deployment's two pods", Duration.ofSeconds(60), () -> plane.poll("-n", namespace, "get", "pods", "-o",
                "jsonpath={.items[*].metadata.name}").map(n -> n.trim().split("\\s+").length == 2).orElse(false));
        String[] names = plane.poll("-n", namespace, "get", "pods", "-o", "jsonpath={.items[*].metadata.name}").orElseThrow()
                .trim().split("\\s+");
        String own = names[0];
        String other = names[1];
        Kubectl bound = new Kubectl(plane.kubeconfigOf(namespace, "p-warden-gate", own));
        Kubectl unbound = new Kubectl(plane.kubeconfigOf(namespace, "p-warden-gate"));
        // The policy takes effect within a moment of its creation: the first allowed change waits for it to be seen.
        Await.until("the policy in force", Duration.ofSeconds(30), () -> {
            try {
                return refused(bound.run(null, "-n", namespace, "label", "pod", other, LABEL + "=primary", "--overwrite"));
            } catch (java.io.IOException | InterruptedException e) {
                return false;
            }
        });
        assertEquals(0, bound.run(null, "-n", namespace, "label", "pod", own, LABEL + "=primary", "--overwrite").exitCode());
        assertEquals(0, bound.run(null, "-n", namespace, "label", "pod", own, LABEL + "=standby", "--overwrite").exitCode());
        for (Command.Run denied : List.of(
                bound.run(null, "-n", namespace, "label", "pod", other, LABEL + "=standby", "--overwrite"),
                bound.run(null, "-n", namespace, "label", "pod", own, "team=ai"),
                bound.run(null, "-n", namespace, "annotate", "pod", own, "note=x"),
                bound.run(null, "-n", namespace, "label", "pod", own, LABEL + "=leader", "--overwrite"),
                unbound.run(null, "-n", namespace, "label", "pod", own, LABEL + "=primary", "--overwrite"))) {
            assertTrue(refused(denied), denied.output());
        }
        assertEquals(0, new Kubectl(plane.kubeconfig()).run(null, "-n", namespace, "label", "pod", other, "team=ai").exitCode(),
                "another user is not concerned");
    }

    /** Refused by the chart's policy, saying so. */
    private static boolean refused(Command.Run run) {
        return run.exitCode() != 0 && run.output().contains("ValidatingAdmissionPolicy");
    }

    @Test
    void aWardenThatCannotNameItsPodRefusesToStartSayingWhatToSet() throws Exception {
        try (WardenProcess warden = WardenProcess.serve("role-unnamed", Map.of("KUBECONFIG", tokenConfig.toString(),
                "KUBERNETES_SERVICE_HOST", "", "POD_NAME", ""), null, List.of("-Dwarden.gate.routing=role"),
                "--mode", "gate", "--data-root", dir.toString())) {
            assertTrue(warden.process().waitFor(60, java.util.concurrent.TimeUnit.SECONDS), warden.log());
            assertEquals(2, warden.process().exitValue(), warden.log());
            assertTrue(warden.log().contains("set POD_NAME from the downward API (fieldRef metadata.name; the chart does)"),
                    warden.log());
        }
    }
}
