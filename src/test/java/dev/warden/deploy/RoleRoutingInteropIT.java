package dev.warden.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.warden.kube.OwnPod;
import dev.warden.kube.ApiServer;
import dev.warden.kube.KubernetesAccess;
import dev.warden.routing.ApiServerEndpoints;
import dev.warden.testing.Await;
import dev.warden.testing.Command;
import dev.warden.testing.ControlPlane;
import dev.warden.testing.Kubectl;
import dev.warden.testing.LeaseWardens;
import dev.warden.testing.PromText;
import dev.warden.testing.WardenProcess;
import io.fabric8.kubernetes.api.model.EndpointAddress;
import io.fabric8.kubernetes.api.model.Endpoints;
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
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Role routing against a real kube-apiserver: the chart installed with {@code gate.routing=role} (and a Lease, so that
 * wardens on data roots of their own elect one), its Deployment's two pods made by the controller manager and never run
 * (no kubelet here); a warden runs here as each pod ({@code warden.gate.role.pod}, an address of its own) with the token
 * of the chart's ServiceAccount, so its Role is what allows the Endpoints' writes. A watch of the Service's Endpoints
 * records every change, in the API server's order: the serving warden's pod alone, never two; stopped with SIGTERM, the
 * serving warden takes its pod out before the other writes its own in; SIGKILLed, the next serving warden's first write
 * replaces it. Each records Events on its own pod (elected, serving) with the chart's Role for them. The token can do
 * that and nothing more: every pod write, and any other object's, is refused by the real API server.
 */
class RoleRoutingInteropIT {

    private static final String NAMESPACE = "role";
    private static final String RELEASE = "r";
    private static final String SERVICE = RELEASE + "-warden";
    /** The pods' addresses, as the downward API would give them (no kubelet runs them here). */
    private static final List<String> ADDRESSES = List.of("10.244.0.11", "10.244.0.12");

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

    /** The addresses the Endpoints routes to, sorted and joined: {@code ""} for none. */
    private static String routed(Endpoints endpoints) {
        return Optional.ofNullable(endpoints.getSubsets()).orElse(List.of()).stream()
                .flatMap(s -> Optional.ofNullable(s.getAddresses()).orElse(List.of()).stream())
                .map(EndpointAddress::getIp).sorted().collect(Collectors.joining(","));
    }

    @Test
    void theServingPodAloneIsRoutedToAndAStoppedOneIsTakenOutBeforeTheOtherIsWrittenIn() throws Exception {
        Config admin = Config.fromKubeconfig(Files.readString(plane.kubeconfig()));
        List<String> changes = new CopyOnWriteArrayList<>();
        try (KubernetesClient client = new KubernetesClientBuilder().withConfig(admin)
                .withHttpClientFactory(new JdkHttpClientFactory()).build();
                Watch watch = client.endpoints().inNamespace(NAMESPACE).withName(SERVICE).watch(new Watcher<Endpoints>() {
                    @Override
                    public void eventReceived(Action action, Endpoints endpoints) {
                        String now = routed(endpoints);
                        if (changes.isEmpty() || !changes.getLast().equals(now)) {
                            changes.add(now);
                        }
                    }

                    @Override
                    public void onClose(WatcherException cause) {
                    }
                });
                LeaseWardens wardens = new LeaseWardens("role", tokenConfig, dir, List.of("-Dwarden.gate.routing=role",
                        "-Dwarden.gate.role.endpoints=" + SERVICE, "-Dwarden.gate.role.ports=http=7433,api=8080,management=9000",
                        "-Dwarden.gate.lease.name=" + RELEASE + "-warden-gate", "-Dwarden.gate.lease.duration=8s",
                        "-Dwarden.gate.lease.renew-deadline=4s", "-Dwarden.gate.lease.retry-period=1s", "-Dwarden.events.enabled=true",
                        "-Dwarden.gate.supervisor.stall-bound=1s"))) {
            Map<WardenProcess, Integer> podOf = new HashMap<>();
            for (int i = 0; i < pods.size(); i++) {
                podOf.put(wardens.start(pods.get(i), "-Dwarden.gate.role.pod=" + pods.get(i),
                        "-Dwarden.gate.role.address=" + ADDRESSES.get(i)), i);
            }
            Await.until("one warden serves", Duration.ofSeconds(60), () -> wardens.theOneStarted().isPresent());
            WardenProcess leader = wardens.theOneStarted().orElseThrow();
            int first = podOf.get(leader);
            int second = 1 - first;
            Await.until("the serving pod routed to alone", Duration.ofSeconds(30),
                    () -> !changes.isEmpty() && changes.getLast().equals(ADDRESSES.get(first)));
            Endpoints written = client.endpoints().inNamespace(NAMESPACE).withName(SERVICE).get();
            // Read again every second while it serves, and left alone: what the API server keeps is what warden wrote.
            Thread.sleep(3000);
            assertEquals(written.getMetadata().getResourceVersion(),
                    client.endpoints().inNamespace(NAMESPACE).withName(SERVICE).get().getMetadata().getResourceVersion(),
                    "not written again while nothing changed");
            // Its ports changed by another writer: written again as warden writes it, within the second's read.
            plane.ok(null, "-n", NAMESPACE, "patch", "endpoints", SERVICE, "--type=json", "-p",
                    "[{\"op\":\"replace\",\"path\":\"/subsets/0/ports/0/port\",\"value\":1}]");
            Await.until("the ports written again", Duration.ofSeconds(10), () -> client.endpoints().inNamespace(NAMESPACE)
                    .withName(SERVICE).get().getSubsets().getFirst().getPorts().stream().noneMatch(p -> p.getPort() == 1));
            assertEquals(pods.get(first), written.getSubsets().getFirst().getAddresses().getFirst().getTargetRef().getName());
            assertEquals(List.of("api", "http", "management"), written.getSubsets().getFirst().getPorts().stream()
                    .map(p -> p.getName()).sorted().toList());
            assertEquals(200, leader.get("/api/v1/role", null).statusCode());
            assertTrue(leader.text("/api/v1/role").contains("\"routed\":true"), leader.text("/api/v1/role"));
            WardenProcess other = podOf.entrySet().stream().filter(e -> e.getValue() == second).findFirst().orElseThrow().getKey();
            assertEquals(503, other.get("/api/v1/role", null).statusCode(), "a standby says so, with no token");
            assertEquals(1.0, PromText.value(leader.text("/q/metrics"), "warden_gate_routed").orElseThrow(), "routed here");
            Await.until("the standby's series says it is not routed to", Duration.ofSeconds(10),
                    () -> {
                        try {
                            return PromText.value(other.text("/q/metrics"), "warden_gate_routed").orElse(-1) == 0.0;
                        } catch (java.io.IOException | InterruptedException e) {
                            return false;
                        }
                    });
            // SIGTERM: out, then the other in.
            assertEquals(0, leader.terminate(), leader.log());
            wardens.forget(leader);
            Await.until("the other pod routed to", Duration.ofSeconds(60), () -> changes.getLast().equals(ADDRESSES.get(second)));
            List<String> order = List.copyOf(changes);
            assertTrue(order.stream().noneMatch(c -> c.contains(",")), "never two: " + order);
            int out = order.indexOf(ADDRESSES.get(first)) + 1;
            assertTrue(order.size() > out && order.get(out).isEmpty() && order.indexOf(ADDRESSES.get(second)) > out,
                    "the stopped pod was out before the other was in: " + order + "\n" + wardens.logs());
            // SIGKILL: the next serving warden's first write replaces the dead one's pod.
            // A warden of its own identity and data root, in the first pod's place: the stopped one's stand-in lilbee
            // supervisor is still about its switch socket.
            WardenProcess restarted = wardens.start(pods.get(first) + "-again", "-Dwarden.gate.role.pod=" + pods.get(first),
                    "-Dwarden.gate.role.address=" + ADDRESSES.get(first));
            Await.until("the restarted warden stands by", Duration.ofSeconds(60), () -> restarted.status("/q/health/live") == 200);
            changes.clear();
            other.process().destroyForcibly();
            other.process().waitFor();
            wardens.forget(other);
            Await.until("the restarted pod routed to", Duration.ofSeconds(60),
                    () -> !changes.isEmpty() && changes.getLast().equals(ADDRESSES.get(first)));
            assertEquals(List.of(ADDRESSES.get(first)), changes, "replaced at once by the successor, never empty, never two: "
                    + changes + "\n" + wardens.logs());
            // Events, recorded with the chart's Role for them (create, nothing else), on each warden's own pod.
            Await.until("the Events on the pods", Duration.ofSeconds(30), () -> events(pods.get(first)).contains("Elected")
                    && events(pods.get(first)).contains("Serving") && events(pods.get(second)).contains("Elected"));
        }
    }

    /**
     * What a stolen token does: the chart's ServiceAccount may read and write the Service's one Endpoints, read and
     * renew the one Lease, and create Events; the real API server refuses it every pod write (of any pod, its own
     * included), and any write of another Service, Endpoints, EndpointSlice or Lease, and a create of either.
     */
    @Test
    void theTokenRoutesTheOneServiceAndWritesNoPod() throws Exception {
        Kubectl token = new Kubectl(tokenConfig);
        Kubectl bound = new Kubectl(plane.kubeconfigOf(NAMESPACE, RELEASE + "-warden-gate", pods.getFirst()));
        for (String allowed : List.of("get endpoints/" + SERVICE, "update endpoints/" + SERVICE, "get leases/r-warden-gate",
                "update leases/r-warden-gate", "create events")) {
            assertEquals("yes", canI(token, allowed), allowed);
        }
        List<String> refused = new java.util.ArrayList<>(List.of("create pods", "delete pods", "deletecollection pods",
                "list pods", "watch pods", "get endpoints", "create endpoints", "delete endpoints/" + SERVICE,
                "patch endpoints/" + SERVICE, "update endpoints/other", "update services/" + SERVICE, "patch services/" + SERVICE,
                "create endpointslices.discovery.k8s.io", "update endpointslices.discovery.k8s.io/" + SERVICE,
                "update leases/other", "create leases", "update events", "get secrets", "create pods/exec", "create pods/eviction",
                "update deployments.apps/" + SERVICE));
        for (String pod : pods) {
            for (String verb : List.of("get", "update", "patch", "delete")) {
                refused.add(verb + " pods/" + pod);
            }
            refused.add("patch pods/" + pod + " --subresource=status");
        }
        for (String denied : refused) {
            assertEquals("no", canI(token, denied), denied);
            assertEquals("no", canI(bound, denied), "with a token bound to its pod: " + denied);
        }
        String own = pods.getFirst();
        for (Command.Run write : List.of(
                bound.run(null, "-n", NAMESPACE, "label", "pod", own, "app=other"),
                bound.run(null, "-n", NAMESPACE, "annotate", "pod", own, "note=x"),
                bound.run(null, "-n", NAMESPACE, "set", "image", "pod/" + own, "lilbee=registry.example/evil:1"),
                bound.run(null, "-n", NAMESPACE, "patch", "pod", pods.getLast(), "--type=merge", "-p",
                        "{\"metadata\":{\"finalizers\":[\"example.com/hold\"]}}"),
                token.run(null, "-n", NAMESPACE, "delete", "pod", pods.getLast(), "--wait=false"),
                token.run(null, "-n", NAMESPACE, "label", "service", SERVICE, "team=ai"),
                token.run("{\"apiVersion\":\"v1\",\"kind\":\"Endpoints\",\"metadata\":{\"name\":\"other\"}}", "-n",
                        NAMESPACE, "create", "-f", "-"))) {
            assertTrue(write.exitCode() != 0 && write.output().contains("Forbidden"), write.output());
        }
    }

    /**
     * A release routed by readiness (its Service selecting its pods, so the endpoints controller made an Endpoints of the
     * Service's name) upgraded to role routing, as docs/deploying.md says: without the annotation the upgrade is
     * refused, naming the Endpoints; annotated as the release's, the upgrade takes it over, warden's write with the
     * chart's token leaves none of the endpoints controller's marks on it, and the mirroring controller makes the
     * Service's EndpointSlice of it.
     */
    @Test
    void anUpgradeFromReadinessRoutingTakesOverTheEndpointsTheControllerMade() throws Exception {
        String namespace = "role-upgrade";
        String release = "u";
        String name = release + "-warden";
        plane.restrictedNamespace(namespace);
        List<String> helm = List.of(KubernetesTypesInteropIT.tool("helm"), "--kubeconfig", plane.kubeconfig().toString(),
                "--namespace", namespace);
        Command.Run installed = KubernetesTypesInteropIT.run("", concat(helm, "install", release, "helm/warden", "-f",
                "helm/warden/ci/gate-role-values.yaml", "--set", "gate.routing=readiness").toArray(String[]::new));
        assertEquals(0, installed.exitCode(), installed.output());
        Await.until("the endpoints controller's Endpoints", Duration.ofSeconds(60),
                () -> plane.poll("-n", namespace, "get", "endpoints", name, "-o", "name").isPresent());
        List<String> upgrade = concat(helm, "upgrade", release, "helm/warden", "-f", "helm/warden/ci/gate-role-values.yaml",
                "--set", "gate.routing=role");
        Command.Run refused = KubernetesTypesInteropIT.run("", upgrade.toArray(String[]::new));
        assertTrue(refused.exitCode() != 0 && refused.output().contains("Endpoints") && refused.output().contains(name),
                refused.output());
        plane.ok(null, "-n", namespace, "annotate", "endpoints", name, "meta.helm.sh/release-name=" + release,
                "meta.helm.sh/release-namespace=" + namespace);
        plane.ok(null, "-n", namespace, "label", "endpoints", name, "app.kubernetes.io/managed-by=Helm", "--overwrite");
        Command.Run upgraded = KubernetesTypesInteropIT.run("", upgrade.toArray(String[]::new));
        assertEquals(0, upgraded.exitCode(), upgraded.output());
        assertEquals("", plane.ok(null, "-n", namespace, "get", "service", name, "-o", "jsonpath={.spec.selector}").strip(),
                "the Service selects no pod now");
        // The serving warden's write, as warden makes it (no lilbee runs here to elect one), with the chart's token.
        Path token = plane.kubeconfigOf(namespace, release + "-warden-gate");
        ApiServer api = new ApiServer(KubernetesAccess.of(Map.of("KUBECONFIG", token.toString()), KubernetesAccess.SERVICE_ACCOUNT),
                Duration.ofSeconds(5));
        try (ApiServerEndpoints endpoints = ApiServerEndpoints.of(new OwnPod(api, namespace, release + "-pod", Optional.empty()),
                new ObjectMapper(), name, List.of(ApiServerEndpoints.Port.of("http=7433")), "10.244.0.21", Optional.empty())) {
            assertEquals(Set.of("10.244.0.21"), endpoints.write(endpoints.read(), Set.of("10.244.0.21")).addresses());
        }
        String labels = plane.ok(null, "-n", namespace, "get", "endpoints", name, "-o", "jsonpath={.metadata.labels}");
        assertFalse(labels.contains("skip-mirror") || labels.contains("endpoints.kubernetes.io/managed-by"), labels);
        Await.until("the mirrored EndpointSlice", Duration.ofSeconds(30), () -> plane.poll("-n", namespace, "get",
                "endpointslices", "-l", "kubernetes.io/service-name=" + name + ",endpointslice.kubernetes.io/managed-by="
                        + "endpointslicemirroring-controller.k8s.io", "-o", "jsonpath={.items[*].endpoints[*].addresses[*]}")
                .map(a -> a.contains("10.244.0.21")).orElse(false));
    }

    private static List<String> concat(List<String> head, String... tail) {
        return java.util.stream.Stream.concat(head.stream(), java.util.stream.Stream.of(tail)).toList();
    }

    /** {@code kubectl auth can-i} of {@code what} ("verb resource[/name] [flags]") in the release's namespace: yes or no. */
    private static String canI(Kubectl as, String what) throws Exception {
        List<String> args = new java.util.ArrayList<>(List.of("-n", NAMESPACE, "auth", "can-i"));
        args.addAll(List.of(what.split(" ")));
        return as.run(null, args.toArray(String[]::new)).output().strip().lines().reduce((a, b) -> b).orElse("");
    }

    /** A warden that cannot name the Endpoints, its pod or its address refuses to start, saying what to set. */
    @Test
    void aWardenThatCannotNameItsPodRefusesToStartSayingWhatToSet() throws Exception {
        List<String> named = List.of("-Dwarden.gate.routing=role", "-Dwarden.gate.role.endpoints=" + SERVICE,
                "-Dwarden.gate.role.ports=http=7433");
        Map<List<String>, String> said = Map.of(
                List.of("-Dwarden.gate.routing=role"), "warden.gate.role.endpoints does not name it: set it to the Service's name",
                named, "set POD_IP from the downward API (fieldRef status.podIP; the chart does)",
                java.util.stream.Stream.concat(named.stream(), java.util.stream.Stream.of("-Dwarden.gate.role.address=10.244.0.9")).toList(),
                "set POD_NAME from the downward API (fieldRef metadata.name; the chart does)");
        for (Map.Entry<List<String>, String> settings : said.entrySet()) {
            try (WardenProcess warden = WardenProcess.serve("role-unnamed", Map.of("KUBECONFIG", tokenConfig.toString(),
                    "KUBERNETES_SERVICE_HOST", "", "POD_NAME", "", "POD_IP", ""), null, settings.getKey(),
                    "--mode", "gate", "--data-root", dir.toString())) {
                assertTrue(warden.process().waitFor(60, java.util.concurrent.TimeUnit.SECONDS), warden.log());
                assertEquals(2, warden.process().exitValue(), warden.log());
                assertTrue(warden.log().contains(settings.getValue()), settings.getValue() + " in " + warden.log());
            }
        }
    }
}
