package dev.warden.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.MissingNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/** What every rendered engine pod must get right (PROTOCOL.md section 6), for the chart and the manifests alike. */
public final class PodChecks {

    private static final YAMLMapper YAML = new YAMLMapper();
    /** The Kubernetes version renderings are for (the chart's kubeVersion asks 1.29 or later): the interop cluster's. */
    public static final String KUBE_VERSION = "1.37.2";

    private PodChecks() {
    }

    /** The objects of a multi-document YAML stream. */
    static List<JsonNode> objects(String manifests) throws IOException {
        List<JsonNode> objects = new ArrayList<>();
        try (var parser = new YAMLFactory().createParser(manifests)) {
            var docs = YAML.readValues(parser, JsonNode.class);
            while (docs.hasNext()) {
                JsonNode doc = docs.next();
                if (doc != null && doc.has("kind")) {
                    objects.add(doc);
                }
            }
        }
        return objects;
    }

    static JsonNode kind(List<JsonNode> objects, String kind) {
        return objects.stream().filter(o -> kind.equals(o.path("kind").asText())).findFirst().orElse(MissingNode.getInstance());
    }

    /**
     * Every ConfigMap rendered is mounted by a container of the Deployment's pod: none is left over, with
     * its volume, from a container the rendering left out (llama-swap's config in gate mode).
     */
    static void assertEveryConfigMapIsMounted(List<JsonNode> objects) {
        JsonNode pod = kind(objects, "Deployment").at("/spec/template/spec");
        List<String> mountedVolumes = new ArrayList<>();
        for (String list : List.of("initContainers", "containers")) {
            pod.path(list).forEach(c -> c.path("volumeMounts").forEach(m -> mountedVolumes.add(m.path("name").asText())));
        }
        List<String> mounted = new ArrayList<>();
        pod.path("volumes").forEach(v -> {
            assertTrue(mountedVolumes.contains(v.path("name").asText()), "volume " + v.path("name").asText() + " is mounted by no container");
            mounted.add(v.at("/configMap/name").asText());
        });
        objects.stream().filter(o -> "ConfigMap".equals(o.path("kind").asText())).map(o -> o.at("/metadata/name").asText())
                .forEach(name -> assertTrue(mounted.contains(name), "ConfigMap " + name + " is rendered but mounted by no container"));
    }

    static JsonNode container(JsonNode podSpec, String list, String name) {
        for (JsonNode c : podSpec.path(list)) {
            if (name.equals(c.path("name").asText())) {
                return c;
            }
        }
        return MissingNode.getInstance();
    }

    /**
     * The NetworkPolicy selects the Deployment's pods and admits, from anyone, only llama-swap's port:
     * warden's API and management ports are reached only from named peers.
     */
    static void assertAdmitsOnlyTheEngineFromAnyone(JsonNode policy, JsonNode deployment) {
        assertFalse(policy.isMissingNode(), "a NetworkPolicy is rendered");
        JsonNode podLabels = deployment.at("/spec/template/metadata/labels");
        policy.at("/spec/podSelector/matchLabels").properties().forEach(label ->
                assertEquals(label.getValue().asText(), podLabels.path(label.getKey()).asText(), "selects the pods: " + label));
        assertEquals("[\"Ingress\"]", policy.at("/spec/policyTypes").toString());
        for (JsonNode rule : policy.at("/spec/ingress")) {
            if (!rule.has("from") || rule.path("from").isEmpty()) {
                assertEquals(1, rule.path("ports").size(), rule.toString());
                assertEquals(8080, rule.at("/ports/0/port").asInt(), "only the engine's port is open to anyone: " + rule);
            } else {
                // Labels anyone who may create a pod can stamp on it are no credential.
                assertFalse(rule.toString().contains("app.kubernetes.io/"), "a rule admits pods by the chart's own labels: " + rule);
            }
        }
    }

    /**
     * Gate mode: warden is a native sidecar told {@code gate}, whose readiness also asks lilbee; the
     * real {@code lilbee serve} is the only main container, on the shared volume, with a writable home.
     */
    static void assertGatesLilbee(JsonNode deployment) {
        JsonNode pod = deployment.at("/spec/template/spec");
        JsonNode warden = container(pod, "initContainers", "warden");
        assertEquals("Always", warden.path("restartPolicy").asText(), "only a native sidecar's startup probe holds lilbee back");
        String env = warden.path("env").toString();
        assertTrue(env.contains("{\"name\":\"WARDEN_MODE\",\"value\":\"gate\"}"), env);
        JsonNode lilbee = container(pod, "containers", "lilbee");
        assertEquals(1, pod.path("containers").size(), "lilbee starts its own engines: " + pod.path("containers"));
        assertEquals("/opt/warden/lilbee-supervisor.py", lilbee.at("/command/1").asText(), "lilbee runs under its supervisor");
        assertTrue(env.contains("{\"name\":\"WARDEN_GATE_SUPERVISOR_SOCKET\",\"value\":\"/run/warden/switch.sock\"}"), env);
        assertSwitchIsWardensAndLilbeesAlone(pod);
        String args = lilbee.path("args").toString();
        assertTrue(args.startsWith("[\"serve\""), args);
        int port = lilbee.at("/ports/0/containerPort").asInt();
        assertTrue(args.contains("\"--port\",\"" + port + "\""), args);
        assertTrue(env.contains("\"WARDEN_GATE_HEALTH_URL\",\"value\":\"http://127.0.0.1:" + port + "/api/health\""), env);
        String lilbeeEnv = lilbee.path("env").toString();
        assertTrue(lilbeeEnv.contains("{\"name\":\"LILBEE_DATA\",\"value\":\"/var/lib/lilbee\"}"), lilbeeEnv);
        assertTrue(lilbeeEnv.contains("\"HOME\""), "lilbee writes its home on a read-only root: " + lilbeeEnv);
        assertTrue(lilbee.path("volumeMounts").toString().contains("\"mountPath\":\"/var/lib/lilbee\""), lilbee.toString());
    }

    /** The switch's volume: mounted by warden's and lilbee's containers, by no other. */
    static void assertSwitchIsWardensAndLilbeesAlone(JsonNode pod) {
        java.util.List<String> mounting = new java.util.ArrayList<>();
        for (String list : java.util.List.of("initContainers", "containers")) {
            for (JsonNode container : pod.path(list)) {
                if (container.path("volumeMounts").toString().contains("\"name\":\"warden-switch\"")) {
                    mounting.add(container.path("name").asText());
                }
            }
        }
        assertEquals(java.util.List.of("warden", "lilbee"), mounting, "who mounts the switch's volume");
        for (JsonNode container : pod.path("containers")) {
            for (JsonNode mount : container.path("volumeMounts")) {
                if (mount.path("name").asText().equals("warden-switch")) {
                    assertTrue(mount.path("readOnly").asBoolean(), "lilbee's container can put no socket of its own at the"
                            + " switch's path: " + mount);
                }
            }
        }
    }

    static void assertHonoursTheProtocol(JsonNode deployment) {
        JsonNode pod = deployment.at("/spec/template/spec");
        boolean byRole = pod.toString().contains("{\"name\":\"WARDEN_GATE_ROUTING\",\"value\":\"role\"}");
        assertEquals("RollingUpdate", deployment.at("/spec/strategy/type").asText());
        if (byRole) {
            // Role routing: a healthy standby is Ready, so an update keeps every pod until its replacement stands by.
            assertEquals(0, deployment.at("/spec/strategy/rollingUpdate/maxUnavailable").asInt(-1));
        } else {
            // Standbys are never ready: availability must not count them (Recreate and any rolling update keeping a
            // pod available leave the Deployment unavailable and deadlock an update; KubeletInteropIT).
            assertEquals(0, deployment.at("/spec/strategy/rollingUpdate/maxSurge").asInt(-1), "a surge pod could never be ready");
            assertEquals("100%", deployment.at("/spec/strategy/rollingUpdate/maxUnavailable").asText());
        }
        assertTrue(pod.path("shareProcessNamespace").asBoolean(), "stopping the engine needs its processes");
        assertFalse(pod.path("enableServiceLinks").asBoolean(true), "no variable for each Service: warden's start reads each");
        assertTrue(pod.path("terminationGracePeriodSeconds").asInt() > 35, "above llama-swap's 35 s backstop");
        assertEquals(1001, pod.at("/securityContext/fsGroup").asInt());
        boolean nativeSidecar = !container(pod, "initContainers", "warden").isMissingNode();
        JsonNode warden = nativeSidecar ? container(pod, "initContainers", "warden") : container(pod, "containers", "warden");
        assertFalse(warden.isMissingNode(), "warden runs in the pod");
        if (nativeSidecar) {
            assertEquals("Always", warden.path("restartPolicy").asText(), "a native sidecar");
        }
        assertEquals("/q/health/live", warden.at("/livenessProbe/httpGet/path").asText(), "liveness never on the lock");
        assertEquals(byRole ? "/q/health/group/routable" : "/q/health/ready", warden.at("/readinessProbe/httpGet/path").asText());
        assertEquals("/q/health/started", warden.at("/startupProbe/httpGet/path").asText());
        assertTrue(warden.path("env").toString().contains(
                "{\"name\":\"WARDEN_HTTP_NODE_ADDRESSES\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.hostIPs\"}}}"),
                "the node's addresses keep the kubelet's share of warden's connections: " + warden.path("env"));
        int livenessGrace = warden.at("/livenessProbe/terminationGracePeriodSeconds").asInt(Integer.MAX_VALUE);
        assertTrue(livenessGrace <= 10, "a stalled warden holds its lock until killed: not the pod's grace, " + livenessGrace);
        assertFalse(pod.path("automountServiceAccountToken").asBoolean(true), "no API token in every container");
        int management = -1;
        for (JsonNode port : warden.path("ports")) {
            if ("management".equals(port.path("name").asText())) {
                management = port.path("containerPort").asInt();
            }
        }
        assertTrue(management > 0, "the management port is declared: " + warden.path("ports"));
        for (String probe : List.of("livenessProbe", "readinessProbe", "startupProbe")) {
            JsonNode port = warden.at("/" + probe + "/httpGet/port");
            assertTrue(port.isInt() && port.asInt() == management, probe + " on the management port, by number: " + port);
        }
        for (JsonNode env : warden.path("env")) {
            assertFalse(env.path("name").asText().equals("WARDEN_ENGINE_API_KEY"), "the engine key is a mounted file, never env");
        }
        for (JsonNode container : List.of(warden, container(pod, "containers", "llama-swap"), container(pod, "containers", "lilbee"))) {
            if (container.isMissingNode()) {
                continue;
            }
            JsonNode security = container.path("securityContext");
            String name = container.path("name").asText();
            assertTrue(security.path("readOnlyRootFilesystem").asBoolean(), name);
            assertTrue(security.path("runAsNonRoot").asBoolean(), name);
            assertFalse(security.path("allowPrivilegeEscalation").asBoolean(true), name);
            assertEquals("ALL", security.at("/capabilities/drop/0").asText(), name);
            assertEquals("RuntimeDefault", security.at("/seccompProfile/type").asText(), name);
            assertTrue(container.path("volumeMounts").toString().contains("\"/tmp\""), name + ": a writable /tmp on a read-only root");
            if (container != warden && byRole) {
                // Role routing: clients follow the label warden sets only once lilbee answers, so a healthy standby's
                // container is ready while its supervisor turns.
                assertEquals("/", container.at("/readinessProbe/httpGet/path").asText(), name + ": " + container.path("readinessProbe"));
            } else if (container != warden) {
                assertTrue(container.at("/readinessProbe/tcpSocket/port").isInt(),
                        name + " restarted in place is ready once it listens, not at its start: " + container.path("readinessProbe"));
            }
        }
    }
}
