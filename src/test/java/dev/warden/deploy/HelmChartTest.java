package dev.warden.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.MissingNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import com.marcnuri.helm.Helm;
import com.marcnuri.helm.LintResult;
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

/** The Helm chart through a real helm (helm-java bundles it): lint, schema, and what it renders. */
class HelmChartTest {

    private static final Path CHART = Path.of("helm", "warden");
    private static final ObjectMapper YAML = new YAMLMapper();

    static Stream<Path> ciValues() throws IOException {
        try (Stream<Path> files = Files.list(CHART.resolve("ci"))) {
            return files.filter(f -> f.toString().endsWith("-values.yaml")).sorted().toList().stream();
        }
    }

    private static List<JsonNode> render(Path values) throws IOException {
        String manifests = new Helm(CHART).template().withName("lib").withValuesFile(values).call();
        List<JsonNode> objects = new ArrayList<>();
        try (var parser = new YAMLFactory().createParser(manifests)) {
            var docs = YAML.readValues(parser, JsonNode.class);
            while (docs.hasNext()) {
                JsonNode doc = docs.next();
                if (doc != null && !doc.isMissingNode() && doc.has("kind")) {
                    objects.add(doc);
                }
            }
        }
        return objects;
    }

    private static JsonNode kind(List<JsonNode> objects, String kind) {
        return objects.stream().filter(o -> kind.equals(o.path("kind").asText())).findFirst().orElse(MissingNode.getInstance());
    }

    private static JsonNode container(JsonNode podSpec, String list, String name) {
        for (JsonNode c : podSpec.path(list)) {
            if (name.equals(c.path("name").asText())) {
                return c;
            }
        }
        return MissingNode.getInstance();
    }

    @Test
    void theChartPassesHelmLintStrict() {
        LintResult result = new Helm(CHART).lint().strict().call();
        assertFalse(result.isFailed(), String.join("\n", result.getMessages()));
    }

    @ParameterizedTest
    @MethodSource("ciValues")
    void everyCiValuesFileRendersAPodThatHonoursTheProtocol(Path values) throws IOException {
        List<JsonNode> objects = render(values);
        JsonNode deployment = kind(objects, "Deployment");
        assertEquals("Recreate", deployment.at("/spec/strategy/type").asText(), "a surge pod could never be ready");
        JsonNode pod = deployment.at("/spec/template/spec");
        assertTrue(pod.path("shareProcessNamespace").asBoolean(), "stopping the engine needs its processes");
        assertTrue(pod.path("terminationGracePeriodSeconds").asInt() > 35, "above llama-swap's 35 s backstop");
        assertEquals(1001, pod.at("/securityContext/fsGroup").asInt());
        boolean native_ = !container(pod, "initContainers", "warden").isMissingNode();
        JsonNode warden = native_ ? container(pod, "initContainers", "warden") : container(pod, "containers", "warden");
        assertFalse(warden.isMissingNode(), "warden runs in the pod");
        if (native_) {
            assertEquals("Always", warden.path("restartPolicy").asText(), "a native sidecar");
        }
        assertEquals("/q/health/live", warden.at("/livenessProbe/httpGet/path").asText(), "liveness never on the lock");
        assertEquals("/q/health/ready", warden.at("/readinessProbe/httpGet/path").asText());
        assertEquals("/q/health/started", warden.at("/startupProbe/httpGet/path").asText());
        JsonNode security = warden.path("securityContext");
        assertTrue(security.path("readOnlyRootFilesystem").asBoolean());
        assertTrue(security.path("runAsNonRoot").asBoolean());
        assertFalse(security.path("allowPrivilegeEscalation").asBoolean(true));
        assertEquals("ALL", security.at("/capabilities/drop/0").asText());
        assertEquals("RuntimeDefault", security.at("/seccompProfile/type").asText());
        assertTrue(warden.path("volumeMounts").toString().contains("\"/tmp\""), "a writable /tmp on a read-only root");
    }

    @Test
    void theApiTokenComesFromASecretFile() throws IOException {
        JsonNode pod = kind(render(CHART.resolve("ci/classic-sidecar-values.yaml")), "Deployment").at("/spec/template/spec");
        JsonNode warden = container(pod, "containers", "warden");
        assertTrue(warden.path("env").toString().contains("WARDEN_API_TOKEN_FILE"), warden.toString());
        assertTrue(pod.path("volumes").toString().contains("\"secretName\":\"warden-api\""), pod.toString());
    }

    @Test
    void theSchemaRejectsUnknownKeysAndWrongTypes(@TempDir Path dir) throws IOException {
        Path typo = Files.writeString(dir.resolve("typo.yaml"), "warden:\n  reaper:\n    idleTTL: 5m\n");
        Exception unknown = assertThrows(Exception.class, () -> render(typo));
        assertTrue(unknown.getMessage().contains("idleTTL"), unknown.getMessage());
        Path wrongType = Files.writeString(dir.resolve("type.yaml"), "replicas: two\n");
        Exception type = assertThrows(Exception.class, () -> render(wrongType));
        assertTrue(type.getMessage().contains("replicas"), type.getMessage());
    }
}
