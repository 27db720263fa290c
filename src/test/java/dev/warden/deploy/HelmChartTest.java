package dev.warden.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import com.marcnuri.helm.Helm;
import com.marcnuri.helm.LintResult;
import dev.warden.testing.Await;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
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

    static Stream<Path> ciValues() throws IOException {
        try (Stream<Path> files = Files.list(CHART.resolve("ci"))) {
            return files.filter(f -> f.toString().endsWith("-values.yaml")).sorted().toList().stream();
        }
    }

    private static List<JsonNode> render(Path... values) throws IOException {
        // In namespace "default", as the real helm renders without --namespace (helm-java would leave it empty).
        var template = new Helm(CHART).template().withName("lib").withNamespace("default").withKubeVersion(PodChecks.KUBE_VERSION);
        for (Path file : values) {
            template = template.withValuesFile(file);
        }
        return PodChecks.objects(template.call());
    }

    private static JsonNode kind(List<JsonNode> objects, String kind) {
        return PodChecks.kind(objects, kind);
    }

    private static JsonNode named(List<JsonNode> objects, String kind, String name) {
        return objects.stream().filter(o -> o.path("kind").asText().equals(kind) && o.at("/metadata/name").asText().equals(name))
                .findFirst().orElse(com.fasterxml.jackson.databind.node.MissingNode.getInstance());
    }

    /**
     * Events on warden's own pod, in any mode: a Role that may create events and nothing more, bound to warden's
     * ServiceAccount, whose token warden's container alone mounts, with the pod's name and UID from the downward API.
     * Turned off, hold mode talks to no API server at all.
     */
    @Test
    void eventsAreCreatedOnlyAndTurnedOffLeaveHoldModeWithoutAnIdentity(@TempDir Path dir) throws IOException {
        List<JsonNode> objects = render(CHART.resolve("ci/default-values.yaml"));
        assertEquals("[{\"apiGroups\":[\"\"],\"resources\":[\"events\"],\"verbs\":[\"create\"]}]",
                named(objects, "Role", "lib-warden-events").path("rules").toString());
        assertEquals("lib-warden-gate", named(objects, "RoleBinding", "lib-warden-events").at("/subjects/0/name").asText());
        JsonNode pod = kind(objects, "Deployment").at("/spec/template/spec");
        String env = container(pod, "initContainers", "warden").path("env").toString();
        assertTrue(env.contains("{\"name\":\"WARDEN_EVENTS_ENABLED\",\"value\":\"true\"}"), env);
        assertTrue(env.contains("\"fieldPath\":\"metadata.uid\""), "the Events name the pod's UID: " + env);
        Path off = Files.writeString(dir.resolve("off.yaml"), "events: {enabled: false}\n");
        List<JsonNode> quiet = render(CHART.resolve("ci/default-values.yaml"), off);
        assertTrue(kind(quiet, "ServiceAccount").isMissingNode() && kind(quiet, "Role").isMissingNode(), "no identity at all");
        assertFalse(kind(quiet, "Deployment").toString().contains("WARDEN_EVENTS_ENABLED"));
    }

    private static JsonNode container(JsonNode podSpec, String list, String name) {
        return PodChecks.container(podSpec, list, name);
    }

    /** A Role of the chart's or k8s/'s: nothing on pods but get, no delete or patch, a create only of Events, else by name. */
    private static void writesNoPod(JsonNode role, String where) {
        assertEquals("Role", role.path("kind").asText(), "no ClusterRole: " + where);
        for (JsonNode rule : role.path("rules")) {
            List<String> verbs = new ArrayList<>();
            rule.path("verbs").forEach(v -> verbs.add(v.asText()));
            List<String> resources = new ArrayList<>();
            rule.path("resources").forEach(r -> resources.add(r.asText()));
            assertFalse(resources.stream().anyMatch(r -> r.equals("*") || r.startsWith("pods")) && !verbs.equals(List.of("get")),
                    "pods: get alone: " + where);
            assertFalse(verbs.contains("*") || verbs.contains("delete") || verbs.contains("deletecollection")
                    || verbs.contains("patch"), "no delete, no patch: " + where);
            if (verbs.contains("create")) {
                assertEquals(List.of("events"), resources, "only Events are created: " + where);
            } else {
                assertEquals(1, rule.path("resourceNames").size(), "one object, by name: " + where);
            }
        }
    }

    /** The number of the port named {@code name} of {@code container}. */
    private static int containerPort(JsonNode container, String name) {
        for (JsonNode port : container.path("ports")) {
            if (port.path("name").asText().equals(name)) {
                return port.path("containerPort").asInt();
            }
        }
        throw new AssertionError("no port " + name + " in " + container);
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
        PodChecks.assertHonoursTheProtocol(kind(objects, "Deployment"));
        PodChecks.assertAdmitsOnlyTheEngineFromAnyone(kind(objects, "NetworkPolicy"), kind(objects, "Deployment"));
    }

    @Test
    void standbysOnEmptyDirsAreRefused(@TempDir Path dir) throws IOException {
        Path values = Files.writeString(dir.resolve("values.yaml"), "storage: {type: emptyDir}\nreplicas: 2\n");
        Exception e = assertThrows(Exception.class, () -> render(values));
        assertTrue(e.getMessage().contains("each pod would get a volume of its own"), e.getMessage());
    }

    @Test
    void gateModeRunsLilbeeAsTheMainContainerBehindWardensStartupProbe() throws IOException {
        List<JsonNode> objects = render(CHART.resolve("ci/gate-values.yaml"));
        PodChecks.assertGatesLilbee(kind(objects, "Deployment"));
        assertEquals(2, kind(objects, "Deployment").at("/spec/replicas").asInt());
        assertEquals("http", kind(objects, "Service").at("/spec/ports/0/targetPort").asText(), "the Service sends traffic to lilbee");
    }

    @Test
    void leaseModeBindsARoleForItsOwnLeaseAndMountsTheTokenInWardenAlone() throws IOException {
        List<JsonNode> objects = render(CHART.resolve("ci/gate-lease-values.yaml"));
        JsonNode pod = kind(objects, "Deployment").at("/spec/template/spec");
        assertEquals("lib-warden-gate", pod.path("serviceAccountName").asText());
        assertFalse(pod.path("automountServiceAccountToken").asBoolean(true), "no token in every container");
        JsonNode warden = container(pod, "initContainers", "warden");
        assertTrue(warden.path("volumeMounts").toString().contains("\"mountPath\":\"/var/run/secrets/kubernetes.io/serviceaccount\""),
                warden.toString());
        assertFalse(container(pod, "containers", "lilbee").path("volumeMounts").toString().contains("serviceaccount"));
        String env = warden.path("env").toString();
        assertTrue(env.contains("{\"name\":\"WARDEN_GATE_ELECTION\",\"value\":\"lease\"}"), env);
        assertTrue(env.contains("{\"name\":\"WARDEN_GATE_LEASE_NAME\",\"value\":\"lib-warden-gate\"}"), env);
        assertTrue(env.contains("\"fieldPath\":\"metadata.name\""), "the pod is the Lease's holder identity: " + env);
        String rules = kind(objects, "Role").path("rules").toString();
        assertEquals("[{\"apiGroups\":[\"coordination.k8s.io\"],\"resources\":[\"leases\"],\"resourceNames\":[\"lib-warden-gate\"],"
                + "\"verbs\":[\"get\",\"update\"]}]", rules, "no create: RBAC cannot name what a create makes");
        JsonNode lease = kind(objects, "Lease");
        assertEquals("lib-warden-gate", lease.at("/metadata/name").asText());
        assertEquals("{\"leaseDurationSeconds\":15}", lease.path("spec").toString(), "held by no one; the duration it lasts");
        assertEquals("lib-warden-gate", kind(objects, "RoleBinding").at("/subjects/0/name").asText());
        assertTrue(named(render(CHART.resolve("ci/gate-values.yaml")), "Role", "lib-warden-gate").isMissingNode(),
                "no Lease's Role in file mode");
        assertTrue(kind(render(CHART.resolve("ci/gate-values.yaml")), "Lease").isMissingNode(), "no Lease in file mode");
    }

    /**
     * In either election lilbee runs under the chart's own supervisor file, its switch socket on a volume of warden's
     * and lilbee's containers alone; the kubelet stops a stalled supervisor within the bound warden is told; and the
     * chart refuses the timings warden would refuse (GateTimings), naming both sides.
     */
    @Test
    void inGateModeLilbeeRunsUnderTheChartsSupervisorAndUnsafeTimingsAreRefused(@TempDir Path dir) throws Exception {
        JsonNode previous = null;
        for (String values : List.of("ci/gate-lease-values.yaml", "ci/gate-values.yaml")) {
            List<JsonNode> objects = render(CHART.resolve(values));
            JsonNode pod = kind(objects, "Deployment").at("/spec/template/spec");
            JsonNode lilbee = container(pod, "containers", "lilbee");
            List<String> command = new java.util.ArrayList<>();
            lilbee.path("command").forEach(c -> command.add(c.asText()));
            List<String> prepared = new java.util.ArrayList<>();
            new YAMLMapper().readTree(CHART.resolve("values.yaml").toFile()).at("/lilbee/supervisor/prepare")
                    .forEach(m -> prepared.add(m.asText()));
            assertTrue(prepared.containsAll(List.of("lilbee.cli", "lilbee.server.*")), prepared.toString());
            assertEquals(List.of("python3", "/opt/warden/lilbee-supervisor.py", "--socket", "/run/warden/switch.sock", "--permit",
                    "5", "--grace", "2", "--health-port", "8081", "--start-after", "2", "--prepare", String.join(",", prepared),
                    "--prepare-after", "2", "--spare", "--", "lilbee"), command, values);
            String script = null;
            for (JsonNode object : objects) {
                if (object.path("metadata").path("name").asText().equals("lib-warden-lilbee-supervisor")) {
                    script = object.at("/data/lilbee-supervisor.py").asText();
                }
            }
            assertEquals(Files.readString(CHART.resolve("files/lilbee-supervisor.py")).strip(), script == null ? null : script.strip(),
                    "the supervisor is the chart's own file, not a string in a template");
            JsonNode liveness = lilbee.path("livenessProbe");
            assertEquals(8081, liveness.at("/httpGet/port").asInt(), "the supervisor's own answer: " + liveness);
            assertEquals(liveness.path("initialDelaySeconds").asText(), command.get(command.indexOf("--start-after") + 1),
                    "no lilbee before the probe watches its supervisor: " + liveness);
            int bound = liveness.path("periodSeconds").asInt() * liveness.path("failureThreshold").asInt()
                    + liveness.path("timeoutSeconds").asInt() + liveness.path("terminationGracePeriodSeconds").asInt();
            JsonNode warden = container(pod, "initContainers", "warden");
            String env = warden.path("env").toString();
            assertTrue(env.contains("{\"name\":\"WARDEN_GATE_SUPERVISOR_STALL_BOUND\",\"value\":\"" + bound + "s\"}"), env);
            assertTrue(env.contains("{\"name\":\"WARDEN_GATE_SUPERVISOR_SOCKET\",\"value\":\"/run/warden/switch.sock\"}"), env);
            assertTrue(warden.path("volumeMounts").toString().contains("{\"name\":\"warden-switch\",\"mountPath\":\"/run/warden\"}"),
                    warden.toString());
            if (previous != null) {
                assertEquals(previous.path("command"), lilbee.path("command"), "the same supervisor in either election");
            }
            previous = lilbee;
        }
        Path shortSettle = Files.writeString(dir.resolve("settle.yaml"), "mode: gate\ngate: {settle: 8s}\n");
        Exception settle = assertThrows(Exception.class, () -> render(shortSettle));
        assertTrue(settle.getMessage().contains("gate.settle 8s must be longer than gate.supervisor.permit 5s plus the longer of"
                + " gate.supervisor.grace 2s and the kubelet's restart of a stalled supervisor (lilbee.supervisor.liveness: 4s)"),
                settle.getMessage());
        Path shortLease = Files.writeString(dir.resolve("lease.yaml"), "mode: gate\ngate: {election: lease, lease: {duration: 14s}}\n");
        Exception lease = assertThrows(Exception.class, () -> render(shortLease));
        assertTrue(lease.getMessage().contains("gate.lease.duration 14s must be longer than gate.lease.renewDeadline 10s"),
                lease.getMessage());
        Path tightPause = Files.writeString(dir.resolve("pause.yaml"), "mode: gate\ngate: {pauseMargin: 4s}\n");
        Exception pause = assertThrows(Exception.class, () -> render(tightPause));
        assertTrue(pause.getMessage().contains("gate.settle 10s less gate.supervisor.permit 5s and gate.supervisor.grace 2s,"
                + " or the permit and the overrun less the grace, leaves less than gate.pauseMargin 4s"), pause.getMessage());
        Path tightLeasePause = Files.writeString(dir.resolve("lease-pause.yaml"),
                "mode: gate\ngate: {election: lease, pauseMargin: 4s}\n");
        Exception leasePause = assertThrows(Exception.class, () -> render(tightLeasePause));
        assertTrue(leasePause.getMessage().contains("gate.lease.duration 15s less gate.lease.renewDeadline 10s and"
                + " gate.supervisor.grace 2s leaves less than gate.pauseMargin 4s"), leasePause.getMessage());
        render(Files.writeString(dir.resolve("pause-ok.yaml"), "mode: gate\ngate: {pauseMargin: 3s}\n"));
        Path slowProbe = Files.writeString(dir.resolve("probe.yaml"), "mode: gate\nlilbee: {supervisor: {liveness: {periodSeconds: 3}}}\n");
        Exception probe = assertThrows(Exception.class, () -> render(slowProbe));
        assertTrue(probe.getMessage().contains("(lilbee.supervisor.liveness: 8s)"), probe.getMessage());
    }

    /**
     * The rendered supervisor and command line, run by a real Python beside warden's real switch socket: it runs its
     * lilbee (a stand-in taking server.lock as filelock does) only on warden's word, holding the gate lock it is given,
     * and stops it when warden says stop.
     */
    @Test
    void theRenderedSupervisorRunsLilbeeOnlyOnWardensWord(@TempDir Path dir) throws Exception {
        List<JsonNode> objects = render(CHART.resolve("ci/gate-values.yaml"));
        Path opt = Files.createDirectories(dir.resolve("opt-warden"));
        for (JsonNode object : objects) {
            if (object.path("metadata").path("name").asText().equals("lib-warden-lilbee-supervisor")) {
                Files.writeString(opt.resolve("lilbee-supervisor.py"), object.at("/data/lilbee-supervisor.py").asText());
            }
        }
        Path socket = dir.resolve("run/switch.sock");
        Path data = Files.createDirectories(dir.resolve("data"));
        Path state = dir.resolve("state");
        List<String> command = new java.util.ArrayList<>();
        container(kind(objects, "Deployment").at("/spec/template/spec"), "containers", "lilbee").path("command")
                .forEach(c -> command.add(c.asText().replace("/opt/warden", opt.toString()).replace("/run/warden/switch.sock",
                        socket.toString())));
        command.set(command.indexOf("--health-port") + 1, Integer.toString(dev.warden.testing.FakeEngine.freePort()));
        // The switch below is this test's, in this very mount namespace: no containers here to tell the two apart.
        command.add(command.indexOf("--"), "--same-container-warden");
        command.subList(command.indexOf("--") + 1, command.size()).clear();
        command.addAll(List.of("python3", dev.warden.testing.Supervised.STAND_IN.toString(), data.resolve("server.lock").toString(),
                state.toString()));
        dev.warden.lock.NativePosix posix = new dev.warden.lock.NativePosix();
        dev.warden.lock.FileLocker locker = new dev.warden.lock.FileLocker(posix);
        Process supervisor = null;
        try (dev.warden.gate.pod.LilbeeSwitch lilbeeSwitch = dev.warden.gate.pod.LilbeeSwitch.open(posix,
                new dev.warden.lock.SystemProcFs(), socket,
                Integer.parseInt(dev.warden.lock.FileLocker.currentUid()));
                dev.warden.lock.HeldLock gate = locker.tryLock(data.resolve("warden-gate.lock")).orElseThrow()) {
            supervisor = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(dir.resolve("out").toFile()).start();
            // It reports once it believes warden (its hello answered), and hears nothing before.
            Await.until("the supervisor connects and reports", () -> {
                lilbeeSwitch.poll(dev.warden.time.MonotonicClock.SYSTEM.now());
                return lilbeeSwitch.report().isPresent();
            });
            assertFalse(Files.exists(state), "nothing runs before warden's word");
            java.util.OptionalInt fd = java.util.OptionalInt.of(gate.descriptorToPass());
            lilbeeSwitch.say(new dev.warden.gate.GateAction.Word.Start(dev.warden.time.MonotonicClock.SYSTEM.now()
                    .plus(Duration.ofSeconds(5))), dev.warden.time.MonotonicClock.SYSTEM.now(), fd);
            Await.until("the stand-in serves", () -> Files.exists(state) && readState(state).startsWith("serving"));
            long pid = Long.parseLong(readState(state).split(" ")[1]);
            Await.until("the supervisor reports it", () -> {
                lilbeeSwitch.poll(dev.warden.time.MonotonicClock.SYSTEM.now());
                return lilbeeSwitch.report().flatMap(dev.warden.gate.pod.SupervisorReport::lilbee).map(r -> r.pid() == pid)
                        .orElse(false);
            });
            lilbeeSwitch.say(new dev.warden.gate.GateAction.Word.Stop("the test says stop"),
                    dev.warden.time.MonotonicClock.SYSTEM.now(), fd);
            Await.until("stopped on warden's word", () -> ProcessHandle.of(pid).map(p -> !p.isAlive()).orElse(true));
        } finally {
            if (supervisor != null) {
                supervisor.descendants().forEach(ProcessHandle::destroyForcibly);
                supervisor.destroyForcibly();
                supervisor.waitFor();
            }
        }
    }

    private static String readState(Path state) {
        try {
            return Files.readString(state);
        } catch (IOException e) {
            return "";
        }
    }

    /**
     * Role routing: the Service selects no pod and routes through the Endpoints of its name, which the chart creates
     * empty; every healthy pod is Ready (warden's readiness asks the routable group, lilbee's container its supervisor),
     * and warden alone gets a token whose Role may get and update that one Endpoints, nothing else, with its pod's name,
     * address and node and the Service's ports to write; without it, readiness routing is untouched.
     */
    @Test
    void roleRoutingWritesTheServicesOneEndpointsAndEveryHealthyPodIsReady(@TempDir Path dir) throws IOException {
        List<JsonNode> objects = render(CHART.resolve("ci/gate-role-values.yaml"));
        JsonNode service = kind(objects, "Service");
        assertTrue(service.at("/spec/selector").isMissingNode(), "no selector: " + service);
        JsonNode endpoints = kind(objects, "Endpoints");
        assertEquals("lib-warden", endpoints.at("/metadata/name").asText(), "the Service's name: " + endpoints);
        assertEquals(service.at("/metadata/name").asText(), endpoints.at("/metadata/name").asText());
        assertTrue(endpoints.path("subsets").isMissingNode(), "created empty, and an upgrade leaves what warden wrote");
        JsonNode pod = kind(objects, "Deployment").at("/spec/template/spec");
        JsonNode warden = container(pod, "initContainers", "warden");
        assertEquals("/q/health/group/routable", warden.at("/readinessProbe/httpGet/path").asText());
        assertEquals("/q/health/started", warden.at("/startupProbe/httpGet/path").asText());
        JsonNode lilbee = container(pod, "containers", "lilbee");
        assertEquals(8081, lilbee.at("/readinessProbe/httpGet/port").asInt(), "a standby's lilbee container is ready: " + lilbee);
        String env = warden.path("env").toString();
        assertTrue(env.contains("{\"name\":\"WARDEN_GATE_ROUTING\",\"value\":\"role\"}"), env);
        assertTrue(env.contains("{\"name\":\"WARDEN_GATE_ROLE_ENDPOINTS\",\"value\":\"lib-warden\"}"), env);
        String ports = "http=" + lilbee.at("/ports/0/containerPort").asInt() + ",api=" + containerPort(warden, "api")
                + ",management=" + containerPort(warden, "management");
        assertTrue(env.contains("{\"name\":\"WARDEN_GATE_ROLE_PORTS\",\"value\":\"" + ports + "\"}"), ports + " in " + env);
        for (String port : List.of("http", "api", "management")) {
            assertTrue(service.at("/spec/ports").toString().contains("\"name\":\"" + port + "\""), "the Service's " + port);
        }
        assertTrue(env.contains("\"fieldPath\":\"status.podIP\"") && env.contains("\"fieldPath\":\"metadata.name\"")
                && env.contains("\"fieldPath\":\"spec.nodeName\""), "warden writes its pod, address and node: " + env);
        assertEquals("lib-warden-gate", pod.path("serviceAccountName").asText());
        assertTrue(warden.path("volumeMounts").toString().contains("/var/run/secrets/kubernetes.io/serviceaccount"));
        assertFalse(lilbee.path("volumeMounts").toString().contains("serviceaccount"), "the token is warden's alone");
        List<JsonNode> roles = objects.stream().filter(o -> o.path("kind").asText().equals("Role"))
                .filter(o -> !o.at("/metadata/name").asText().endsWith("-events")).toList();
        assertEquals(1, roles.size(), "the Endpoints' Role, and no Lease's in file mode: " + roles);
        assertEquals("[{\"apiGroups\":[\"\"],\"resources\":[\"endpoints\"],\"resourceNames\":[\"lib-warden\"],"
                + "\"verbs\":[\"get\",\"update\"]}]", roles.getFirst().path("rules").toString());
        assertTrue(roles.getFirst().at("/metadata/namespace").isMissingNode(), "in the pods' namespace");
        assertTrue(kind(objects, "Lease").isMissingNode());
        Path leased = Files.writeString(dir.resolve("values.yaml"), "gate: {election: lease, lease: {namespace: elsewhere}}\n");
        List<JsonNode> both = render(CHART.resolve("ci/gate-role-values.yaml"), leased);
        assertEquals(List.of("elsewhere", "", ""), both.stream().filter(o -> o.path("kind").asText().equals("Role"))
                .map(o -> o.at("/metadata/namespace").asText()).toList(), "the Lease's Role where the Lease is, the Endpoints' and the Events' beside them");
        List<JsonNode> byReadiness = render(CHART.resolve("ci/gate-values.yaml"));
        JsonNode readiness = kind(byReadiness, "Deployment").at("/spec/template/spec");
        assertEquals("/q/health/ready", container(readiness, "initContainers", "warden").at("/readinessProbe/httpGet/path").asText());
        assertFalse(kind(byReadiness, "Service").at("/spec/selector").isMissingNode(), "routed by readiness: selected");
        assertTrue(kind(byReadiness, "Endpoints").isMissingNode());
        assertTrue(kind(byReadiness, "PodDisruptionBudget").isMissingNode(),
                "no budget where a standby is never Ready: it would block draining the serving pod's node");
        assertEquals(1, kind(objects, "PodDisruptionBudget").at("/spec/maxUnavailable").asInt());
        Path noService = Files.writeString(dir.resolve("no-service.yaml"), "service: {enabled: false}\n");
        Exception refused = assertThrows(Exception.class, () -> render(CHART.resolve("ci/gate-role-values.yaml"), noService));
        assertTrue(refused.getMessage().contains("set service.enabled true, or gate.routing readiness"), refused.getMessage());
    }

    /**
     * No Role of the chart writes a pod, in any mode, with any of the values that change what it grants, nor any of
     * k8s/'s: every rule on pods (there is none) may only get them, and no rule but the Events' creates anything; each
     * other rule names its one object.
     */
    @Test
    void noRoleMayWriteAPodInAnyModeWithAnyValues(@TempDir Path dir) throws IOException {
        List<String> variants = List.of("", "gate: {election: lease}\n", "gate: {routing: role}\n",
                "gate: {routing: role, election: lease}\n", "gate: {routing: readiness}\n", "events: {enabled: false}\n",
                "gate: {routing: role, election: lease, lease: {namespace: elsewhere}}\nevents: {enabled: true}\n");
        List<Path> bases = Stream.concat(ciValues(), Stream.of(Files.writeString(dir.resolve("hold.yaml"), "mode: hold\n"))).toList();
        int roles = 0;
        for (Path base : bases) {
            for (int i = 0; i < variants.size(); i++) {
                Path variant = Files.writeString(dir.resolve("variant-" + i + ".yaml"), variants.get(i).isEmpty() ? "{}\n" : variants.get(i));
                List<JsonNode> objects;
                try {
                    objects = render(base, variant);
                } catch (Exception refused) {
                    continue; // a combination the chart refuses renders no Role either
                }
                for (JsonNode role : objects.stream().filter(o -> o.path("kind").asText().matches("(Cluster)?Role")).toList()) {
                    roles++;
                    writesNoPod(role, base.getFileName() + " with " + variants.get(i).strip() + ": " + role);
                }
            }
        }
        int manifests = 0;
        try (Stream<Path> files = Files.walk(Path.of("k8s"))) {
            for (Path file : files.filter(f -> f.toString().endsWith(".yaml")).toList()) {
                try (var documents = new YAMLMapper().readerFor(JsonNode.class).<JsonNode>readValues(file.toFile())) {
                    for (JsonNode object : documents.readAll()) {
                        if (object.path("kind").asText().matches("(Cluster)?Role")) {
                            manifests++;
                            writesNoPod(object, file + ": " + object);
                        }
                    }
                }
            }
        }
        assertTrue(manifests > 0, "k8s/'s Roles looked at");
        assertTrue(roles > 10, "the Roles looked at: " + roles);
    }

    /**
     * What people expect of a chart: names overridden, images from a registry and pinned by digest, labels on the pods
     * (not in the selector), topology spread, the UID left to a platform that assigns it, and a cluster older than the
     * native sidecar refused.
     */
    @Test
    void namesImagesPodLabelsAndSpreadAreTheUsersToSet(@TempDir Path dir) throws IOException {
        String digest = "sha256:" + "a".repeat(64);
        Path values = Files.writeString(dir.resolve("values.yaml"), """
                fullnameOverride: lib-ai
                mode: gate
                image: {registry: registry.example/team, digest: %1$s}
                lilbee: {image: {registry: registry.example/team, digest: %1$s}}
                podLabels: {team: ai}
                topologySpreadConstraints:
                  - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway,
                     labelSelector: {matchLabels: {app.kubernetes.io/name: warden}}}
                """.formatted(digest));
        List<JsonNode> objects = render(values);
        JsonNode deployment = kind(objects, "Deployment");
        assertEquals("lib-ai", deployment.at("/metadata/name").asText());
        JsonNode pod = deployment.at("/spec/template/spec");
        assertEquals("registry.example/team/warden:0.1.0@" + digest, container(pod, "initContainers", "warden").path("image").asText());
        assertEquals("registry.example/team/lilbee:0.6.90b449@" + digest, container(pod, "containers", "lilbee").path("image").asText());
        assertEquals("ai", deployment.at("/spec/template/metadata/labels/team").asText());
        assertFalse(deployment.at("/spec/selector").toString().contains("team"), "never in the selector");
        assertEquals("kubernetes.io/hostname", pod.at("/topologySpreadConstraints/0/topologyKey").asText());
        Path assigned = Files.writeString(dir.resolve("assigned.yaml"), "runAsUser: null\nmode: gate\n");
        JsonNode openshift = kind(render(assigned), "Deployment").at("/spec/template/spec");
        assertFalse(openshift.toString().contains("runAsUser") || openshift.toString().contains("fsGroup"),
                "a platform that assigns the UID (OpenShift's restricted SCC) is left to: " + openshift.path("securityContext"));
        assertTrue(openshift.at("/securityContext/runAsNonRoot").asBoolean());
        assertEquals(1001, pod.at("/securityContext/fsGroup").asInt(), "by default every container runs as 1001");
        Path renamed = Files.writeString(dir.resolve("renamed.yaml"), "nameOverride: keeper\n");
        assertEquals("lib-keeper", kind(render(renamed), "Deployment").at("/metadata/name").asText());
        Exception old = assertThrows(Exception.class, () -> new Helm(CHART).template().withName("lib").withKubeVersion("1.28.9").call());
        assertTrue(old.getMessage().contains("kubeVersion"), old.getMessage());
    }

    /** gate.routing auto, the default: role with standbys, readiness (and no API access) for a single pod. */
    @Test
    void theDefaultRoutesByRoleWithStandbysAndByReadinessForOnePod(@TempDir Path dir) throws IOException {
        Path two = Files.writeString(dir.resolve("two.yaml"), """
                mode: gate
                replicas: 2
                storage: {existingClaim: shared, accessModes: [ReadWriteMany]}
                """);
        assertEquals("lib-warden", kind(render(two), "Endpoints").at("/metadata/name").asText());
        Path one = Files.writeString(dir.resolve("one.yaml"), "mode: gate\n");
        List<JsonNode> single = render(one);
        assertFalse(kind(single, "Service").at("/spec/selector").isMissingNode());
        assertTrue(kind(single, "Endpoints").isMissingNode());
        assertTrue(named(single, "Role", "lib-warden-role").isMissingNode(), "no Endpoints to write for one pod");
        assertTrue(kind(single, "PodDisruptionBudget").isMissingNode());
    }

    @Test
    void serviceLinksAreOffUnlessAskedFor(@TempDir Path dir) throws IOException {
        JsonNode pod = kind(render(), "Deployment").at("/spec/template/spec");
        assertFalse(pod.path("enableServiceLinks").asBoolean(true), "a variable per Service is what warden's start reads");
        Path on = Files.writeString(dir.resolve("values.yaml"), "enableServiceLinks: true\n");
        assertTrue(kind(render(on), "Deployment").at("/spec/template/spec/enableServiceLinks").asBoolean(false));
    }

    @Test
    void gateModeWithAClassicSidecarIsRefused(@TempDir Path dir) throws IOException {
        Path values = Files.writeString(dir.resolve("values.yaml"), "mode: gate\nnativeSidecar: false\n");
        Exception e = assertThrows(Exception.class, () -> render(values));
        assertTrue(e.getMessage().contains("mode gate needs nativeSidecar: true"), e.getMessage());
    }

    @Test
    void theEngineKeyIsAMountedSecretFile() throws IOException {
        JsonNode pod = kind(render(CHART.resolve("ci/classic-sidecar-values.yaml")), "Deployment").at("/spec/template/spec");
        JsonNode warden = container(pod, "containers", "warden");
        assertTrue(warden.path("env").toString().contains(
                "{\"name\":\"WARDEN_ENGINE_API_KEY_FILE\",\"value\":\"/var/run/secrets/warden-engine/api-key\"}"), warden.toString());
        assertTrue(warden.path("volumeMounts").toString().contains("\"mountPath\":\"/var/run/secrets/warden-engine\""), warden.toString());
        assertTrue(pod.path("volumes").toString().contains("\"secretName\":\"llama-swap-keys\""), pod.toString());
    }

    @Test
    void theNetworkPolicyAdmitsTheApiAndMetricsOnlyFromNamedPeersAndCanBeTurnedOff(@TempDir Path dir) throws IOException {
        Path peers = Files.writeString(dir.resolve("peers.yaml"), """
                networkPolicy:
                  apiFrom: [{podSelector: {matchLabels: {app: ops}}}]
                  metricsFrom: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}}]
                """);
        JsonNode policy = kind(render(peers), "NetworkPolicy");
        String rules = policy.at("/spec/ingress").toString();
        assertTrue(rules.contains("{\"from\":[{\"podSelector\":{\"matchLabels\":{\"app\":\"ops\"}}}],\"ports\":[{\"port\":9095,"), rules);
        assertTrue(rules.contains("\"kubernetes.io/metadata.name\":\"monitoring\"}}}],\"ports\":[{\"port\":9096,"), rules);
        Path off = Files.writeString(dir.resolve("off.yaml"), "networkPolicy:\n  enabled: false\n");
        assertTrue(kind(render(off), "NetworkPolicy").isMissingNode());
    }

    @Test
    void byDefaultTheNetworkPolicyOpensOnlyTheServedPort() throws IOException {
        for (Path values : List.of(CHART.resolve("values.yaml"), CHART.resolve("ci/gate-values.yaml"))) {
            List<JsonNode> objects = render(values);
            JsonNode rules = kind(objects, "NetworkPolicy").at("/spec/ingress");
            assertEquals(1, rules.size(), "one rule, the served port from anyone; the API and metrics from no one: " + rules);
            assertFalse(rules.get(0).has("from"), rules.toString());
            assertEquals(kind(objects, "Service").at("/spec/ports/0/port").asInt(), rules.at("/0/ports/0/port").asInt(), rules.toString());
        }
    }

    @Test
    void aLeaseNamespaceOfItsOwnHoldsTheRoleAndTheLease(@TempDir Path dir) throws IOException {
        Path values = Files.writeString(dir.resolve("lease.yaml"), "mode: gate\nreplicas: 2\nstorage: {type: pvc, accessModes: [ReadWriteMany]}\n"
                + "gate: {election: lease, lease: {namespace: warden-leases}}\n");
        List<JsonNode> objects = render(values);
        assertEquals("warden-leases", kind(objects, "Role").at("/metadata/namespace").asText());
        assertEquals("warden-leases", kind(objects, "RoleBinding").at("/metadata/namespace").asText());
        assertEquals("warden-leases", kind(objects, "Lease").at("/metadata/namespace").asText());
        JsonNode warden = container(kind(objects, "Deployment").at("/spec/template/spec"), "initContainers", "warden");
        assertTrue(warden.path("env").toString().contains("{\"name\":\"WARDEN_GATE_LEASE_NAMESPACE\",\"value\":\"warden-leases\"}"),
                warden.toString());
    }

    @Test
    void theApiTokenComesFromASecretFile() throws IOException {
        JsonNode pod = kind(render(CHART.resolve("ci/classic-sidecar-values.yaml")), "Deployment").at("/spec/template/spec");
        JsonNode warden = container(pod, "containers", "warden");
        assertTrue(warden.path("env").toString().contains("WARDEN_API_TOKEN_FILE"), warden.toString());
        assertTrue(pod.path("volumes").toString().contains("\"secretName\":\"warden-api\""), pod.toString());
    }

    /**
     * The PodMonitor scrapes every pod of the release at warden's management port; each alert has a severity, a
     * summary and a description, reads only this release's series, and links a runbook section that docs/operations.md has.
     */
    @Test
    void theMonitoringObjectsScrapeEveryPodAndEachAlertHasARunbook() throws IOException {
        List<JsonNode> objects = render(CHART.resolve("ci/monitoring-values.yaml"));
        JsonNode deployment = kind(objects, "Deployment");
        JsonNode monitor = kind(objects, "PodMonitor");
        assertEquals(deployment.at("/spec/selector/matchLabels"), monitor.at("/spec/selector/matchLabels"));
        assertEquals("kube-prometheus-stack", monitor.at("/metadata/labels/release").asText());
        JsonNode endpoint = monitor.at("/spec/podMetricsEndpoints/0");
        assertEquals("/q/metrics", endpoint.path("path").asText());
        JsonNode warden = container(deployment.at("/spec/template/spec"), "initContainers", "warden");
        assertTrue(warden.path("ports").toString().contains("{\"name\":\"" + endpoint.path("port").asText() + "\",\"containerPort\":9096}"),
                warden.toString());
        assertTrue(warden.path("env").toString().contains("{\"name\":\"WARDEN_METRICS_RELEASE\",\"value\":\"lib\"}"),
                warden.toString());

        String operations = Files.readString(Path.of("docs/operations.md"));
        JsonNode rules = kind(objects, "PrometheusRule").at("/spec/groups/0/rules");
        assertEquals(9, rules.size(), rules.toString());
        for (JsonNode rule : rules) {
            String alert = rule.path("alert").asText();
            assertTrue(List.of("critical", "warning").contains(rule.at("/labels/severity").asText()), rule.toString());
            assertEquals("ml-platform", rule.at("/labels/team").asText(), rule.toString());
            assertFalse(rule.at("/annotations/summary").asText().isBlank(), rule.toString());
            String anchor = alert.toLowerCase(java.util.Locale.ROOT);
            assertTrue(rule.at("/annotations/description").asText().endsWith("docs/operations.md#" + anchor), rule.toString());
            assertEquals("https://example.invalid/warden/docs/operations.md#" + anchor, rule.at("/annotations/runbook_url").asText());
            assertTrue(operations.contains("\n### " + alert + "\n"), "docs/operations.md has a runbook for " + alert);
            String expr = rule.path("expr").asText();
            int series = expr.split("\\bwarden_[a-z_]+\\{", -1).length - 1;
            assertTrue(series > 0, expr);
            assertEquals(series, expr.split("\\{namespace=\"default\", release=\"lib\"}", -1).length - 1,
                    "every series read is this release's: " + expr);
        }
        assertTrue(kind(render(CHART.resolve("ci/default-values.yaml")), "PrometheusRule").isMissingNode(), "opt-in");
        assertTrue(kind(render(CHART.resolve("ci/default-values.yaml")), "PodMonitor").isMissingNode(), "opt-in");
    }

    @Test
    void theNativeFlavourRunsTheNativeImageAndATagOverridesIt(@TempDir Path dir) throws IOException {
        List<JsonNode> objects = render(CHART.resolve("ci/native-values.yaml"));
        JsonNode pod = kind(objects, "Deployment").at("/spec/template/spec");
        assertEquals("warden:0.1.0-native", container(pod, "initContainers", "warden").path("image").asText());
        // The helm test pod runs the same image: KubernetesTypesInteropIT checks it in the real helm's rendering of each ci
        // values file (helm-java leaves the hook out).
        assertEquals("warden:0.1.0", container(kind(render(CHART.resolve("ci/default-values.yaml")), "Deployment")
                .at("/spec/template/spec"), "initContainers", "warden").path("image").asText(), "the JVM image by default");
        Path tagged = Files.writeString(dir.resolve("tagged.yaml"), "image: {flavour: native, tag: 0.1.0-native-debug}\n");
        assertEquals("warden:0.1.0-native-debug", container(kind(render(tagged), "Deployment").at("/spec/template/spec"),
                "initContainers", "warden").path("image").asText());
        Path unknown = Files.writeString(dir.resolve("unknown.yaml"), "image: {flavour: graalvm}\n");
        Exception e = assertThrows(Exception.class, () -> render(unknown));
        assertTrue(e.getMessage().contains("/image/flavour"), e.getMessage());
    }

    @Test
    void theSchemaRejectsUnknownKeysAndWrongTypes(@TempDir Path dir) throws IOException {
        Path typo = Files.writeString(dir.resolve("typo.yaml"), "warden:\n  reaper:\n    idleTTL: 5m\n");
        Exception unknown = assertThrows(Exception.class, () -> render(typo));
        assertTrue(unknown.getMessage().contains("idleTTL"), unknown.getMessage());
        Path tooOften = Files.writeString(dir.resolve("often.yaml"), "warden:\n  reaper:\n    interval: 100ms\n");
        Exception interval = assertThrows(Exception.class, () -> render(tooOften));
        assertTrue(interval.getMessage().contains("interval"), interval.getMessage());
        Path wrongType = Files.writeString(dir.resolve("type.yaml"), "replicas: two\n");
        Exception type = assertThrows(Exception.class, () -> render(wrongType));
        assertTrue(type.getMessage().contains("replicas"), type.getMessage());
    }
}
