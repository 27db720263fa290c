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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The plain manifests under k8s/, built by kubectl's own kustomize. */
class KustomizeTest {

    private static String kustomize(String overlay) throws IOException, InterruptedException {
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
    @ValueSource(strings = {"emptydir", "pvc", "classic-sidecar", "gate"})
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
            case "gate" -> "lilbee";
            default -> "llama-swap";
        }, pod.at("/containers/0/name").asText());
        if (overlay.equals("gate")) {
            PodChecks.assertGatesLilbee(PodChecks.kind(objects, "Deployment"));
            // The wait for warden's go is the chart's, word for word (the chart renders it; the overlay spells it).
            JsonNode chart = PodChecks.container(PodChecks.kind(PodChecks.objects(new com.marcnuri.helm.Helm(Path.of("helm", "warden"))
                    .template().withName("lib").withValuesFile(Path.of("helm", "warden", "ci", "gate-values.yaml")).call()),
                    "Deployment").at("/spec/template/spec"), "containers", "lilbee");
            JsonNode command = PodChecks.container(pod, "containers", "lilbee").path("command");
            assertEquals(4, command.size(), command.toString());
            assertEquals(chart.at("/command/2").asText().strip(), command.get(2).asText().strip());
            assertEquals(chart.path("command").get(0), command.get(0));
            assertEquals("lilbee", command.get(3).asText());
            // So is the kubelet's stop of lilbee when warden stops answering (a warden kept down across a reset).
            JsonNode liveness = PodChecks.container(pod, "containers", "lilbee").path("livenessProbe");
            assertEquals(chart.path("livenessProbe"), liveness, "the chart's liveness probe on warden: " + liveness);
        }
        if (overlay.equals("pvc") || overlay.equals("gate")) {
            assertEquals("warden-data", shared.at("/persistentVolumeClaim/claimName").asText(), shared.toString());
            assertTrue(shared.path("emptyDir").isMissingNode(), shared.toString());
            assertFalse(PodChecks.kind(objects, "PersistentVolumeClaim").isMissingNode());
        } else {
            assertTrue(shared.has("emptyDir"), shared.toString());
        }
    }
}
