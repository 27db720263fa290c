package dev.warden.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.Command;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The chart and the k8s/ manifests through the real helm (built from its Go module) and decoded
 * strictly against the Kubernetes API types of k8s.io/api by {@code src/test/go/kubecheck}: an
 * unknown or misspelt field, a wrong type or an unknown kind fails, as it would with
 * {@code kubectl apply --validate=strict}. .ci/run builds both tools into target/tools.
 */
class KubernetesTypesInteropIT {

    private static final Path CHART = Path.of("helm", "warden");

    static String tool(String name) {
        return dev.warden.testing.InteropTools.path(name);
    }

    static Command.Run run(String stdin, String... command) throws IOException, InterruptedException {
        return Command.run(stdin, List.of(command));
    }

    static Command.Run accepted(String stdin, String... command) throws IOException, InterruptedException {
        Command.Run result = run(stdin, command);
        assertEquals(0, result.exitCode(), String.join(" ", command) + "\n" + result.output());
        return result;
    }

    static Stream<Path> ciValues() throws IOException {
        return HelmChartTest.ciValues();
    }

    /**
     * The chart's README is what helm-docs makes of values.yaml's comments now (its own template, README.md.gotmpl):
     * a value added or explained without generating it again fails here, naming the command.
     */
    @Test
    void theChartReadmeIsTheOneHelmDocsGeneratesFromTheValues() throws Exception {
        String generated = accepted("", tool("helm-docs"), "--chart-search-root", CHART.toString(), "--dry-run",
                "--log-level", "error").output();
        String committed = Files.readString(CHART.resolve("README.md"));
        assertEquals(committed.strip(), generated.strip(), "helm/warden/README.md is not what values.yaml says: run"
                + " helm-docs --chart-search-root helm/warden (go install github.com/norwoodj/helm-docs/cmd/helm-docs@v1.14.2)");
    }

    @ParameterizedTest
    @MethodSource("ciValues")
    void everyCiValuesFilePassesHelmLintStrict(Path values) throws Exception {
        Command.Run lint = accepted("", tool("helm"), "lint", "--strict", CHART.toString(), "-f", values.toString());
        assertTrue(lint.output().contains("0 chart(s) failed"), lint.output());
    }

    @ParameterizedTest
    @MethodSource("ciValues")
    void everyObjectTheChartRendersDecodesStrictly(Path values) throws Exception {
        String rendered = accepted("", tool("helm"), "template", "lib", CHART.toString(), "-f", values.toString(),
                "--kube-version", PodChecks.KUBE_VERSION).output();
        Command.Run decoded = accepted(rendered, tool("kubecheck"), "-");
        // The pod, its volume, config and service, and the `helm test` hook: all of them decoded.
        assertTrue(decoded.output().contains("ok apps/v1 Deployment lib-warden"), decoded.output());
        assertTrue(decoded.output().contains("ok v1 Pod lib-warden-test-readiness"), decoded.output());
        // helm-java leaves the test hook out of its renders; the real helm's has it.
        List<com.fasterxml.jackson.databind.JsonNode> objects = PodChecks.objects(rendered);
        com.fasterxml.jackson.databind.JsonNode pod = PodChecks.kind(objects, "Deployment").at("/spec/template/spec");
        com.fasterxml.jackson.databind.JsonNode warden = PodChecks.container(pod, "initContainers", "warden").isMissingNode()
                ? PodChecks.container(pod, "containers", "warden") : PodChecks.container(pod, "initContainers", "warden");
        com.fasterxml.jackson.databind.JsonNode test = PodChecks.kind(objects, "Pod");
        assertEquals(warden.path("image").asText(), test.at("/spec/containers/0/image").asText(),
                "the helm test pod runs warden's own image, which the cluster already has");
        // It asks through the Service's served port, the one the NetworkPolicy opens to anyone: no hole for its labels.
        int served = PodChecks.kind(objects, "Service").at("/spec/ports/0/port").asInt();
        String script = test.at("/spec/containers/0/command/2").asText();
        assertTrue(script.contains("/" + served + "\"\n"), test.toString());
        // Found by the variables the kubelet sets for the Service: no cluster DNS needed (KubeletInteropIT has none).
        assertTrue(script.contains("${LIB_WARDEN_SERVICE_HOST:-lib-warden}"), script);
        assertEquals(rendered.split("(?m)^kind: ").length - 1, decoded.output().lines().count(),
                "every rendered object is decoded: " + decoded.output());
    }

    @ParameterizedTest
    @ValueSource(strings = {"emptydir", "pvc", "classic-sidecar", "gate", "gate-lease"})
    void eachKustomizeOverlayDecodesStrictly(String overlay) throws Exception {
        Command.Run decoded = accepted("", tool("kubecheck"), "--kustomize", "k8s/overlays/" + overlay);
        assertTrue(decoded.output().contains("ok apps/v1 Deployment warden"), decoded.output());
        assertTrue(decoded.output().contains("ok v1 Service warden"), decoded.output());
    }

    @Test
    void theCheckerRefusesAnUnknownFieldAndAnUnknownKind(@TempDir Path dir) throws Exception {
        // The controls: a checker that accepted everything would pass the tests above.
        List<String> deployment = new ArrayList<>(Files.readAllLines(Path.of("k8s/base/deployment.yaml")));
        int line = deployment.indexOf(deployment.stream().filter(l -> l.trim().equals("shareProcessNamespace: true"))
                .findFirst().orElseThrow());
        deployment.set(line, deployment.get(line).replace("shareProcessNamespace", "shareProcessNamespaces"));
        Command.Run typo = run(String.join("\n", deployment), tool("kubecheck"), "-");
        assertEquals(1, typo.exitCode(), typo.output());
        assertTrue(typo.output().contains("unknown field \"spec.template.spec.shareProcessNamespaces\""), typo.output());

        Command.Run wrongType = run("apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  ports:\n    - port: http\n",
                tool("kubecheck"), "-");
        assertEquals(1, wrongType.exitCode(), wrongType.output());

        Command.Run unknownKind = run("apiVersion: v1\nkind: Sidecar\nmetadata:\n  name: x\n", tool("kubecheck"), "-");
        assertEquals(1, unknownKind.exitCode(), unknownKind.output());

        Command.Run monitor = run("apiVersion: monitoring.coreos.com/v1\nkind: PodMonitor\nmetadata:\n  name: x\nspec:\n"
                + "  podMetricEndpoints: [{port: management}]\n", tool("kubecheck"), "-");
        assertEquals(1, monitor.exitCode(), monitor.output());
        assertTrue(monitor.output().contains("unknown field \"spec.podMetricEndpoints\""), monitor.output());
        assertTrue(unknownKind.output().contains("no kind \"Sidecar\""), unknownKind.output());
    }
}
