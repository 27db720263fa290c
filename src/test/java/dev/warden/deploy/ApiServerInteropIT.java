package dev.warden.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.warden.testing.Await;
import dev.warden.testing.Command;
import dev.warden.testing.ControlPlane;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The chart and the manifests applied to a real kube-apiserver (built from its Go modules by
 * {@code src/test/kubernetes/build-control-plane.sh}): server-side, with strict field validation, into
 * namespaces that enforce PodSecurity {@code restricted}, with the controller manager creating the
 * pods so that admission judges each of them; negative controls that must be refused; and helm's
 * install, upgrade and uninstall against it. Runs with {@code -Pinterop -Dinterop.control-plane=DIR
 * -Dinterop.helm=HELM}, as .ci/run does.
 */
class ApiServerInteropIT {

    private static final Path CHART = Path.of("helm", "warden");
    private static final ObjectMapper JSON = new ObjectMapper();

    private static ControlPlane plane;

    @BeforeAll
    static void startTheControlPlane() throws Exception {
        Path bin = Path.of(KubernetesTypesInteropIT.tool("control-plane"));
        plane = ControlPlane.start(bin, Files.createTempDirectory("warden-control-plane"));
        // prometheus-operator's CRDs, as a cluster running it has them: the chart's PodMonitor and PrometheusRule are
        // then validated against their schemas, strictly, like every other object.
        try (Stream<Path> crds = Files.list(Path.of(KubernetesTypesInteropIT.tool("monitoring-crds")))) {
            for (Path crd : crds.sorted().toList()) {
                plane.ok(Files.readString(crd), "apply", "--server-side", "--field-manager=warden-test", "-f", "-");
            }
        }
        plane.ok(null, "wait", "--for=condition=Established", "--timeout=60s", "crd/podmonitors.monitoring.coreos.com",
                "crd/prometheusrules.monitoring.coreos.com");
    }

    @AfterAll
    static void stopIt() throws Exception {
        if (plane != null) {
            plane.close();
        }
    }

    static Stream<Path> ciValues() throws IOException {
        return HelmChartTest.ciValues();
    }

    @ParameterizedTest
    @MethodSource("ciValues")
    void everyChartRenderingIsAdmittedAndItsPodsAreCreated(Path values) throws Exception {
        String name = values.getFileName().toString().replace("-values.yaml", "");
        String namespace = "helm-" + name;
        plane.restrictedNamespace(namespace);
        String rendered = KubernetesTypesInteropIT.accepted("", KubernetesTypesInteropIT.tool("helm"), "template", "w-" + name,
                CHART.toString(), "-f", values.toString(), "--namespace", namespace, "--kube-version", PodChecks.KUBE_VERSION).output();
        PodChecks.assertEveryConfigMapIsMounted(PodChecks.objects(rendered));
        assertAdmittedWithPods(namespace, rendered);
    }

    @ParameterizedTest
    @ValueSource(strings = {"emptydir", "pvc", "classic-sidecar", "gate", "gate-lease"})
    void everyOverlayIsAdmittedAndItsPodsAreCreated(String overlay) throws Exception {
        String namespace = "kustomize-" + overlay;
        plane.restrictedNamespace(namespace);
        String rendered = plane.ok(null, "kustomize", "k8s/overlays/" + overlay);
        PodChecks.assertEveryConfigMapIsMounted(PodChecks.objects(rendered));
        assertAdmittedWithPods(namespace, rendered);
    }

    /**
     * Applied server-side with strict field validation, without a PodSecurity warning (or any but Endpoints'
     * deprecation); then the
     * controller manager creates every replica's pod, which PodSecurity enforce admits.
     */
    private static void assertAdmittedWithPods(String namespace, String manifests) throws Exception {
        // A pod created before the controller manager made the namespace's default ServiceAccount is refused once
        // (FailedCreate: serviceaccount "default" not found), a warning that says nothing of the chart.
        Await.until("the default ServiceAccount of " + namespace,
                () -> plane.poll("-n", namespace, "get", "serviceaccount", "default", "-o", "name").isPresent());
        String applied = plane.ok(manifests, "apply", "--server-side", "--field-manager=warden-test", "--validate=strict",
                "-n", namespace, "-f", "-");
        // Role routing writes a core v1 Endpoints on purpose (docs/deploying.md: it routes the Service of its name
        // alone), which the API server warns is deprecated; any other warning fails.
        assertFalse(applied.replace("Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice", "")
                .contains("Warning"), applied);
        JsonNode deployments = JSON.readTree(plane.ok(null, "-n", namespace, "get", "deployments", "-o", "json")).path("items");
        assertEquals(1, deployments.size(), deployments.toString());
        int replicas = deployments.get(0).at("/spec/replicas").asInt();
        Await.until(replicas + " pods in " + namespace, () -> pods(namespace) >= replicas);
        // The API server's own cluster-IP repair loop can race a Service's creation and warn of it (ClusterIPNotAllocated,
        // "repairing": its allocation was not committed when the loop looked), a warning that says nothing of the chart.
        String events = plane.ok(null, "-n", namespace, "get", "events", "--field-selector",
                "type=Warning,reason!=ClusterIPNotAllocated", "--no-headers",
                "-o", "custom-columns=OBJECT:.involvedObject.name,REASON:.reason,MESSAGE:.message");
        assertEquals("", events.strip(), "no warning events (a FailedCreate would be a pod PodSecurity refused)");
    }

    /** How many pods the namespace has (-1 while kubectl cannot say). */
    private static int pods(String namespace) {
        return plane.poll("-n", namespace, "get", "pods", "-o", "json").map(json -> {
            try {
                return JSON.readTree(json).path("items").size();
            } catch (IOException e) {
                return -1;
            }
        }).orElse(-1);
    }

    /** The same namespaces refuse what they should: checks that could not fail would prove nothing. */
    @Test
    void negativeControlsAreRefused() throws Exception {
        String namespace = "negative";
        plane.restrictedNamespace(namespace);
        Command.Run root = plane.kubectl(null, "-n", namespace, "run", "as-root", "--image=warden:0.1.0", "--restart=Never");
        assertNotEquals(0, root.exitCode(), root.output());
        assertTrue(root.output().contains("violates PodSecurity \"restricted:latest\""), root.output());

        String deployment = plane.ok(null, "kustomize", "k8s/overlays/emptydir");
        Command.Run typo = plane.kubectl(deployment.replace("readOnlyRootFilesystem: true", "readOnlyRootFilesytem: true"),
                "apply", "--server-side", "--validate=strict", "-n", namespace, "-f", "-");
        assertNotEquals(0, typo.exitCode(), typo.output());
        assertTrue(typo.output().contains("readOnlyRootFilesytem: field not declared in schema"), typo.output());

        Command.Run privileged = plane.kubectl(deployment.replace("allowPrivilegeEscalation: false", "allowPrivilegeEscalation: true"),
                "apply", "--server-side", "--validate=strict", "-n", namespace, "-f", "-");
        assertEquals(0, privileged.exitCode(), privileged.output());
        assertTrue(privileged.output().contains("would violate PodSecurity"), "warned on apply: " + privileged.output());
        Await.until("the ReplicaSet's pod is refused", () -> plane.poll("-n", namespace, "get", "events", "--field-selector",
                "reason=FailedCreate", "-o", "yaml").orElse("").contains("violates PodSecurity"));
        assertEquals(0, pods(namespace));

        Command.Run rule = plane.kubectl("""
                apiVersion: monitoring.coreos.com/v1
                kind: PrometheusRule
                metadata: {name: misspelt}
                spec:
                  groups:
                    - name: warden
                      rules:
                        - alert: WardenSplitBrain
                          expresion: sum(warden_serving) > 1
                """, "apply", "--server-side", "--validate=strict", "-n", namespace, "-f", "-");
        assertNotEquals(0, rule.exitCode(), rule.output());
        assertTrue(rule.output().contains("expresion"), rule.output());
    }

    @Test
    void helmInstallsUpgradesAndUninstallsTheChart() throws Exception {
        String namespace = "helm-release";
        plane.restrictedNamespace(namespace);
        String helm = KubernetesTypesInteropIT.tool("helm");
        String kubeconfig = "--kubeconfig=" + plane.kubeconfig();
        KubernetesTypesInteropIT.accepted("", helm, kubeconfig, "install", "warden", CHART.toString(), "-n", namespace);
        KubernetesTypesInteropIT.accepted("", helm, kubeconfig, "upgrade", "warden", CHART.toString(), "-n", namespace,
                "-f", CHART.resolve("ci/emptydir-values.yaml").toString());
        String history = KubernetesTypesInteropIT.accepted("", helm, kubeconfig, "history", "warden", "-n", namespace).output();
        assertTrue(history.lines().anyMatch(l -> l.startsWith("2 ") && l.contains("deployed")), history);
        Await.until("the upgraded release's pod", () -> pods(namespace) >= 1);
        KubernetesTypesInteropIT.accepted("", helm, kubeconfig, "uninstall", "warden", "-n", namespace, "--wait");
        List<String> left = plane.ok(null, "-n", namespace, "get", "deployments,services,configmaps,networkpolicies",
                "-l", "app.kubernetes.io/instance=warden", "-o", "name").lines().toList();
        assertEquals(List.of(), left);
    }
}
