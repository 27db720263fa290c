package dev.warden.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The plain manifests under k8s/, built by kubectl's own kustomize. */
class KustomizeTest {

    static String kustomize(String overlay) throws IOException, InterruptedException {
        Process process;
        try {
            process = new ProcessBuilder("kubectl", "kustomize", "k8s/overlays/" + overlay).redirectErrorStream(true).start();
        } catch (IOException e) {
            System.err.println("SKIPPED: kubectl is not installed; the kustomize build of k8s/ does not run");
            Assumptions.abort("kubectl is not installed");
            throw e;
        }
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, process.exitValue(), out);
        return out;
    }

    @ParameterizedTest
    @ValueSource(strings = {"emptydir", "pvc", "classic-sidecar", "gate", "gate-lease"})
    void eachOverlayBuildsAPodThatHonoursTheProtocol(String overlay) throws Exception {
        List<JsonNode> objects = PodChecks.objects(kustomize(overlay));
        PodChecks.assertHonoursTheProtocol(PodChecks.kind(objects, "Deployment"));
        PodChecks.assertAdmitsOnlyTheEngineFromAnyone(PodChecks.kind(objects, "NetworkPolicy"), PodChecks.kind(objects, "Deployment"));
        assertFalse(PodChecks.kind(objects, "Service").isMissingNode());
        JsonNode shared = com.fasterxml.jackson.databind.node.MissingNode.getInstance();
        for (JsonNode volume : PodChecks.kind(objects, "Deployment").at("/spec/template/spec/volumes")) {
            if ("shared".equals(volume.path("name").asText())) {
                shared = volume;
            }
        }
        assertFalse(shared.isMissingNode(), "a volume named shared");
        JsonNode pod = PodChecks.kind(objects, "Deployment").at("/spec/template/spec");
        // The classic-sidecar component moves warden to the containers, first, and leaves no init container.
        assertEquals(overlay.equals("classic-sidecar"), pod.path("initContainers").isMissingNode(), pod.toString());
        assertEquals(switch (overlay) {
            case "classic-sidecar" -> "warden";
            case "gate", "gate-lease" -> "lilbee";
            default -> "llama-swap";
        }, pod.at("/containers/0/name").asText());
        if (overlay.startsWith("gate")) {
            PodChecks.assertGatesLilbee(PodChecks.kind(objects, "Deployment"));
            // The supervisor's command and probes are the chart's, word for word (the chart renders them; the overlay
            // spells them, and runs the supervisor the reference image ships where the chart mounts its own).
            JsonNode chart = PodChecks.container(PodChecks.kind(PodChecks.objects(chart("gate-values.yaml")), "Deployment")
                    .at("/spec/template/spec"), "containers", "lilbee");
            JsonNode lilbee = PodChecks.container(pod, "containers", "lilbee");
            assertEquals(chart.path("command"), lilbee.path("command"));
            assertEquals(chart.path("livenessProbe"), lilbee.path("livenessProbe"), "the kubelet's restart of a stalled supervisor");
            assertTrue(java.nio.file.Files.readString(Path.of("src/main/docker/Dockerfile.lilbee"))
                    .contains("COPY --chmod=0444 lilbee-supervisor.py /opt/warden/lilbee-supervisor.py"), "the image ships it there");
        }
        if (!overlay.equals("emptydir") && !overlay.equals("classic-sidecar")) {
            assertEquals("warden-data", shared.at("/persistentVolumeClaim/claimName").asText(), shared.toString());
            assertTrue(shared.path("emptyDir").isMissingNode(), shared.toString());
            assertFalse(PodChecks.kind(objects, "PersistentVolumeClaim").isMissingNode());
        } else {
            assertTrue(shared.has("emptyDir"), shared.toString());
        }
    }

    /** The chart as helm-java renders it for release lib with {@code ci/<values>}, and {@code more} set. */
    static String chart(String values, String... more) {
        return chart(Path.of("helm", "warden", "ci", values), more);
    }

    /** The chart as helm-java renders it for release lib with the values file {@code values}, and {@code more} set. */
    static String chart(Path values, String... more) {
        var template = new com.marcnuri.helm.Helm(Path.of("helm", "warden")).template().withName("lib")
                .withKubeVersion(PodChecks.KUBE_VERSION).withValuesFile(values);
        for (String setting : more) {
            String[] pair = setting.split("=", 2);
            template.set(pair[0], pair[1]);
        }
        return template.call();
    }

    /**
     * overlays/gate-lease is the chart's gate.election lease (routed by readiness, without Events): the same Lease, the
     * same Role's rules, the same settings of warden's Lease election and identity, the same token projected into
     * warden's container alone; the names differ only by the release's prefix (lib-).
     */
    @Test
    void theLeaseOverlayIsTheChartsLeaseElection() throws Exception {
        List<JsonNode> overlay = PodChecks.objects(kustomize("gate-lease"));
        List<JsonNode> chart = PodChecks.objects(chart("gate-lease-values.yaml", "gate.routing=readiness", "events.enabled=false")
                .replace("lib-warden-gate", "warden-gate"));
        assertEquals(PodChecks.kind(chart, "Role").path("rules"), PodChecks.kind(overlay, "Role").path("rules"));
        assertEquals(PodChecks.kind(chart, "Lease").path("spec"), PodChecks.kind(overlay, "Lease").path("spec"));
        assertEquals(PodChecks.kind(chart, "ServiceAccount").path("automountServiceAccountToken"),
                PodChecks.kind(overlay, "ServiceAccount").path("automountServiceAccountToken"));
        JsonNode chartPod = PodChecks.kind(chart, "Deployment").at("/spec/template/spec");
        JsonNode overlayPod = PodChecks.kind(overlay, "Deployment").at("/spec/template/spec");
        assertEquals(chartPod.path("serviceAccountName"), overlayPod.path("serviceAccountName"));
        assertEquals(volume(chartPod, "gate-token"), volume(overlayPod, "gate-token"));
        JsonNode chartWarden = PodChecks.container(chartPod, "initContainers", "warden");
        JsonNode overlayWarden = PodChecks.container(overlayPod, "initContainers", "warden");
        for (String name : List.of("WARDEN_GATE_ELECTION", "WARDEN_GATE_LEASE_NAME", "WARDEN_GATE_LEASE_DURATION",
                "WARDEN_GATE_LEASE_RENEW_DEADLINE", "WARDEN_GATE_LEASE_RETRY_PERIOD", "POD_NAME", "NODE_NAME")) {
            assertEquals(env(chartWarden, name), env(overlayWarden, name), name);
            assertFalse(env(overlayWarden, name).isMissingNode(), name);
        }
        assertEquals(mount(chartWarden, "gate-token"), mount(overlayWarden, "gate-token"));
        assertTrue(mount(PodChecks.container(overlayPod, "containers", "lilbee"), "gate-token").isMissingNode(),
                "the token is warden's alone");
    }

    private static JsonNode named(JsonNode list, String name) {
        for (JsonNode item : list) {
            if (name.equals(item.path("name").asText())) {
                return item;
            }
        }
        return com.fasterxml.jackson.databind.node.MissingNode.getInstance();
    }

    private static JsonNode volume(JsonNode pod, String name) {
        return named(pod.path("volumes"), name);
    }

    /** An environment variable of {@code container}, its value or valueFrom, whatever order and form it is written in. */
    private static JsonNode env(JsonNode container, String name) {
        JsonNode found = named(container.path("env"), name);
        return found.has("value") ? found.path("value") : found.path("valueFrom");
    }

    private static JsonNode mount(JsonNode container, String name) {
        return named(container.path("volumeMounts"), name);
    }
}
