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
            // The supervisor's command and probes are the chart's, word for word (the chart renders them; the overlay
            // spells them, and runs the supervisor the reference image ships where the chart mounts its own).
            JsonNode chart = PodChecks.container(PodChecks.kind(PodChecks.objects(new com.marcnuri.helm.Helm(Path.of("helm", "warden"))
                    .template().withName("lib").withKubeVersion(PodChecks.KUBE_VERSION).withValuesFile(Path.of("helm", "warden", "ci", "gate-values.yaml")).call()),
                    "Deployment").at("/spec/template/spec"), "containers", "lilbee");
            JsonNode lilbee = PodChecks.container(pod, "containers", "lilbee");
            assertEquals(chart.path("command"), lilbee.path("command"));
            assertEquals(chart.path("livenessProbe"), lilbee.path("livenessProbe"), "the kubelet's restart of a stalled supervisor");
            assertTrue(java.nio.file.Files.readString(Path.of("src/main/docker/Dockerfile.lilbee"))
                    .contains("COPY --chmod=0444 lilbee-supervisor.py /opt/warden/lilbee-supervisor.py"), "the image ships it there");
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
