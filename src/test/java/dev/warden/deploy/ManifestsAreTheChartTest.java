package dev.warden.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.warden.config.WardenConfig;
import io.smallrye.config.WithDefault;
import java.io.IOException;
import java.io.Reader;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Each plain overlay under k8s/ is the chart rendered for the same choices, object for object: the Deployment's whole
 * spec (every container, probe, mount, security setting and variable), the Service's, the NetworkPolicy's, and in
 * lease mode the Role's rules, the Lease and the ServiceAccount. What may differ is named here and nothing else: the
 * release's name and labels (the chart prefixes its objects and labels them with the release), its checksum
 * annotations, the names of the ConfigMaps and claims the volumes point at (kustomize hashes its ConfigMap; the
 * overlays name their claim), the chart's volume for llama-swap's config (engine-config, the overlays'
 * llama-swap-config), what Kubernetes defaults anyway (imagePullPolicy IfNotPresent for a tagged image, no resources, a
 * ClusterIP Service), the variables the chart sets to warden's own defaults, and in gate mode the chart's ConfigMap
 * copy of lilbee's supervisor (the overlays run the one the reference lilbee image ships at the same path).
 */
class ManifestsAreTheChartTest {

    /** Variables the chart sets from the release: its name, for the metrics' labels. */
    private static final List<String> RELEASE_VARIABLES = List.of("WARDEN_METRICS_RELEASE");
    /** Labels the chart adds for helm's release: not the plain manifests' business. */
    private static final List<String> RELEASE_LABELS = List.of("app.kubernetes.io/instance", "helm.sh/chart",
            "app.kubernetes.io/managed-by", "app.kubernetes.io/version");
    /** The plain manifests have no API access: no Events, clients routed by readiness, the reference lilbee image. */
    private static final List<String> PLAIN = List.of("events.enabled=false");
    private static final List<String> GATE = List.of("events.enabled=false", "mode=gate", "gate.routing=readiness",
            "lilbee.image.repository=lilbee");

    static Stream<Arguments> overlays() {
        return Stream.of(Arguments.of("pvc", PLAIN), Arguments.of("emptydir", plus(PLAIN, "storage.type=emptyDir")),
                Arguments.of("classic-sidecar", plus(PLAIN, "storage.type=emptyDir", "nativeSidecar=false")),
                Arguments.of("gate", plus(GATE, "replicas=2")), Arguments.of("gate-lease", plus(GATE, "replicas=2", "gate.election=lease")));
    }

    /** The values file beside the settings: the Lease overlay spreads its pods one a node, as a user would set it. */
    private static Path values(String overlay) {
        return overlay.equals("gate-lease") ? Path.of("src/test/resources/deploy/one-pod-a-node-values.yaml")
                : Path.of("helm/warden/ci/default-values.yaml");
    }

    private static List<String> plus(List<String> settings, String... more) {
        return Stream.concat(settings.stream(), Stream.of(more)).toList();
    }

    @ParameterizedTest
    @MethodSource("overlays")
    void eachOverlayIsTheChartForTheSameChoices(String overlay, List<String> settings) throws Exception {
        List<JsonNode> plain = PodChecks.objects(KustomizeTest.kustomize(overlay));
        // The release's prefix on every name the chart gives (its ServiceAccount, its Lease, their settings).
        List<JsonNode> chart = PodChecks.objects(KustomizeTest.chart(values(overlay), settings.toArray(String[]::new))
                .replace("lib-warden", "warden"));
        Map<String, String> defaults = wardenDefaults();
        for (String kind : List.of("Deployment", "Service", "NetworkPolicy", "Role", "Lease", "ServiceAccount")) {
            JsonNode fromChart = PodChecks.kind(chart, kind);
            JsonNode fromOverlay = PodChecks.kind(plain, kind);
            if (kind.equals("Role") || kind.equals("Lease") || kind.equals("ServiceAccount")) {
                assertEquals(fromChart.isMissingNode(), fromOverlay.isMissingNode(), overlay + ": a " + kind + " in one only");
                if (fromChart.isMissingNode()) {
                    continue;
                }
            }
            assertFalse(fromOverlay.isMissingNode(), overlay + " has no " + kind);
            String expected = comparable(fromChart, defaults, fromOverlay).toPrettyString();
            String actual = comparable(fromOverlay, Map.of(), fromOverlay).toPrettyString();
            if (!expected.equals(actual)) {
                // Both sides written out whole, for a diff: the assertion's message alone is hard to read.
                Path out = Files.createDirectories(Path.of("target", "manifests-vs-chart"));
                Files.writeString(out.resolve(overlay + "-" + kind + ".chart.json"), expected);
                Files.writeString(out.resolve(overlay + "-" + kind + ".overlay.json"), actual);
            }
            assertEquals(expected, actual, overlay + ": the " + kind + " differs from the chart's (diff the two files under"
                    + " target/manifests-vs-chart)");
        }
    }

    /**
     * What is compared of {@code object}: its spec (a Role's rules, a ServiceAccount's token setting), without what may
     * differ. {@code defaults}: warden's own default of each variable, which the chart may set where {@code overlay}
     * leaves it unset.
     */
    private static JsonNode comparable(JsonNode object, Map<String, String> defaults, JsonNode overlay) {
        ObjectNode kept = object.deepCopy();
        JsonNode part = switch (object.path("kind").asText()) {
            case "Role" -> kept.path("rules");
            case "ServiceAccount" -> kept.path("automountServiceAccountToken");
            default -> kept.path("spec");
        };
        part = part.deepCopy();
        withoutReleaseLabels(part);
        if (part.path("template").path("metadata").path("annotations") instanceof ObjectNode annotations) {
            annotations.properties().removeIf(a -> a.getKey().startsWith("checksum/"));
            if (annotations.isEmpty()) {
                ((ObjectNode) part.path("template").path("metadata")).remove("annotations");
            }
        }
        if (part instanceof ObjectNode spec && "ClusterIP".equals(spec.path("type").asText())) {
            spec.remove("type");
        }
        JsonNode pod = part.path("template").path("spec");
        JsonNode overlayPod = overlay.path("spec").path("template").path("spec");
        for (JsonNode volume : pod.path("volumes")) {
            ObjectNode v = (ObjectNode) volume;
            if (v.path("name").asText().equals("engine-config")) {
                v.put("name", "llama-swap-config");
            }
            if (v.path("configMap") instanceof ObjectNode configMap) {
                configMap.put("name", "(a ConfigMap)");
            }
            if (v.path("persistentVolumeClaim") instanceof ObjectNode claim) {
                claim.put("claimName", "(a claim)");
            }
        }
        removeNamed(pod.path("volumes"), "lilbee-supervisor");
        for (String list : List.of("initContainers", "containers")) {
            for (JsonNode container : pod.path(list)) {
                ObjectNode c = (ObjectNode) container;
                if ("IfNotPresent".equals(c.path("imagePullPolicy").asText())) {
                    c.remove("imagePullPolicy");
                }
                if (c.path("resources").isObject() && c.path("resources").isEmpty()) {
                    c.remove("resources");
                }
                for (JsonNode mount : c.path("volumeMounts")) {
                    if (mount.path("name").asText().equals("engine-config")) {
                        ((ObjectNode) mount).put("name", "llama-swap-config");
                    }
                }
                removeNamed(c.path("volumeMounts"), "lilbee-supervisor");
                JsonNode overlayContainer = PodChecks.container(overlayPod, list, c.path("name").asText());
                if (c.path("env") instanceof ArrayNode env) {
                    for (Iterator<JsonNode> i = env.iterator(); i.hasNext(); ) {
                        JsonNode variable = i.next();
                        String name = variable.path("name").asText();
                        boolean inOverlay = overlayContainer.path("env").findValuesAsText("name").contains(name);
                        if (RELEASE_VARIABLES.contains(name)
                                || !inOverlay && variable.path("value").asText().equals(defaults.get(name))) {
                            i.remove();
                        }
                    }
                }
                sortByName(c.path("env"));
                sortByName(c.path("volumeMounts"));
            }
        }
        sortByName(pod.path("volumes"));
        return sortedKeys(part);
    }

    /** The same tree, every object's keys in order: the chart and kustomize write fields in orders of their own. */
    private static JsonNode sortedKeys(JsonNode node) {
        if (node instanceof ObjectNode object) {
            ObjectNode sorted = object.objectNode();
            Map<String, JsonNode> byKey = new TreeMap<>();
            object.properties().forEach(property -> byKey.put(property.getKey(), property.getValue()));
            byKey.forEach((key, value) -> sorted.set(key, sortedKeys(value)));
            return sorted;
        }
        if (node instanceof ArrayNode array) {
            ArrayNode sorted = array.arrayNode();
            array.forEach(item -> sorted.add(sortedKeys(item)));
            return sorted;
        }
        return node;
    }

    private static void withoutReleaseLabels(JsonNode node) {
        if (node instanceof ObjectNode object) {
            RELEASE_LABELS.forEach(object::remove);
            object.forEach(ManifestsAreTheChartTest::withoutReleaseLabels);
        } else if (node instanceof ArrayNode array) {
            array.forEach(ManifestsAreTheChartTest::withoutReleaseLabels);
        }
    }

    private static void removeNamed(JsonNode list, String name) {
        if (list instanceof ArrayNode array) {
            for (Iterator<JsonNode> i = array.iterator(); i.hasNext(); ) {
                if (i.next().path("name").asText().equals(name)) {
                    i.remove();
                }
            }
        }
    }

    /** Lists keyed by name, in name order: the chart and the overlays write them in orders of their own. */
    private static void sortByName(JsonNode list) {
        if (list instanceof ArrayNode array) {
            List<JsonNode> items = new ArrayList<>();
            array.forEach(items::add);
            items.sort(Comparator.comparing(n -> n.path("name").asText()));
            array.removeAll();
            items.forEach(array::add);
        }
    }

    /**
     * warden's own default of each setting, by the variable that sets it: WardenConfig's {@code @WithDefault}s and
     * application.properties, named as SmallRye Config maps a variable to a property (WARDEN_GATE_SETTLE is
     * warden.gate.settle).
     */
    static Map<String, String> wardenDefaults() throws IOException {
        Map<String, String> defaults = new HashMap<>();
        collect(WardenConfig.class, "warden", defaults);
        Properties properties = new Properties();
        try (Reader reader = Files.newBufferedReader(Path.of("src/main/resources/application.properties"))) {
            properties.load(reader);
        }
        properties.stringPropertyNames().stream().filter(key -> !key.startsWith("%"))
                .forEach(key -> defaults.put(variable(key), properties.getProperty(key)));
        return defaults;
    }

    private static void collect(Class<?> mapping, String prefix, Map<String, String> defaults) {
        for (Method method : mapping.getMethods()) {
            String property = prefix + "." + method.getName().replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase(Locale.ROOT);
            WithDefault value = method.getAnnotation(WithDefault.class);
            if (value != null) {
                defaults.put(variable(property), value.value());
            } else if (method.getReturnType().isInterface() && method.getReturnType().getName().startsWith("dev.warden.config")) {
                collect(method.getReturnType(), property, defaults);
            }
        }
    }

    private static String variable(String property) {
        return property.toUpperCase(Locale.ROOT).replaceAll("[^A-Z0-9]", "_");
    }
}
