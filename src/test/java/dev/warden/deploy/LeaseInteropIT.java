package dev.warden.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.Await;
import dev.warden.testing.Command;
import dev.warden.testing.ControlPlane;
import dev.warden.testing.LeaseWardens;
import dev.warden.testing.Peer;
import dev.warden.testing.PromText;
import dev.warden.testing.WardenProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Gate mode's Lease election against a real kube-apiserver: wardens in lease mode, each on a data
 * root of its own (as pods on different nodes, whose file locks do not meet), authenticated with a
 * token of a ServiceAccount bound to the chart's own Role, each beside the real lilbee supervisor running a stand-in.
 * Short timings (an 8 s Lease, 4 s renew deadline, 1 s retry, the supervisor's 1 s grace) keep it quick; the defaults
 * are client-go's.
 */
class LeaseInteropIT {

    private static final Duration LEASE = Duration.ofSeconds(8);
    private static final Duration RENEW_DEADLINE = Duration.ofSeconds(4);
    private static final Duration RETRY = Duration.ofSeconds(1);
    private static final String NAMESPACE = "lease";
    private static final String RELEASE = "w";
    /** The chart's Lease name for release w, the one its Role allows. */
    private static final String LEASE_NAME = "w-warden-gate";

    private static ControlPlane plane;
    private static Path tokenConfig;

    @TempDir
    Path dir;

    private LeaseWardens wardens;
    private final List<Peer> lilbees = new ArrayList<>();

    /**
     * The control plane, and the chart installed in it with helm in lease mode: its Lease, ServiceAccount, Role and
     * RoleBinding (its Deployment too, which no kubelet here runs).
     */
    @BeforeAll
    static void controlPlaneAndTheChart() throws Exception {
        Path bin = Path.of(KubernetesTypesInteropIT.tool("control-plane"));
        plane = ControlPlane.start(bin, Files.createTempDirectory("warden-lease"));
        plane.restrictedNamespace(NAMESPACE);
        helm("install");
        tokenConfig = plane.kubeconfigOf(NAMESPACE, RELEASE + "-warden-gate");
    }

    /** {@code helm install} or {@code upgrade} of {@code release}, the chart in lease mode, as the cluster's admin; {@code more}: --set options. */
    private static Command.Run helmRun(String command, String release, String... more) throws Exception {
        List<String> args = new ArrayList<>(List.of(KubernetesTypesInteropIT.tool("helm"), command, release, "helm/warden",
                "-f", "helm/warden/ci/gate-lease-values.yaml", "--namespace", NAMESPACE,
                "--kubeconfig", plane.kubeconfig().toString()));
        args.addAll(List.of(more));
        return KubernetesTypesInteropIT.run("", args.toArray(String[]::new));
    }

    private static void helm(String command, String... more) throws Exception {
        Command.Run run = helmRun(command, RELEASE, more);
        assertEquals(0, run.exitCode(), "helm " + command + "\n" + run.output());
    }

    @AfterAll
    static void stopThePlane() throws Exception {
        if (plane != null) {
            plane.close();
        }
    }

    @BeforeEach
    void wardens() {
        wardens = contending("lease", dir, LEASE_NAME);
    }

    /** Each test starts from the chart's Lease held by no one: deleted, and made again by an upgrade. */
    @AfterEach
    void stopWardens() throws Exception {
        wardens.close();
        plane.kubectl(null, "-n", NAMESPACE, "delete", "lease", LEASE_NAME, "--ignore-not-found");
        helm("upgrade");
    }

    private void awaitStarted(String what) {
        try {
            Await.until(what, Duration.ofSeconds(60), () -> wardens.theOneStarted().isPresent());
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "\n" + wardens.logs(), e);
        }
    }

    private String lease(String name, String path) {
        return plane.poll("-n", NAMESPACE, "get", "lease", name, "-o", "jsonpath={" + path + "}").orElse("");
    }

    private String holder() {
        return lease(LEASE_NAME, ".spec.holderIdentity");
    }

    @Test
    void threeWardensElectExactlyOneAndAKilledLeaderIsReplacedWithinTheLeasePlusARetry() throws Exception {
        List<WardenProcess> started = new ArrayList<>();
        for (String identity : List.of("a", "b", "c")) {
            started.add(wardens.start(identity));
        }
        wardens.watchForOverlaps();
        awaitStarted("one warden is started");
        WardenProcess leader = wardens.theOneStarted().orElseThrow();
        String identity = leader.json("/api/v1/status").at("/gate/lease/identity").asText();
        assertEquals(identity, holder(), "the Lease names the started warden");
        for (WardenProcess other : started) {
            if (other != leader) {
                // A standby learns the holder at its next attempt (a retry period, with jitter, after it last looked).
                other.awaitJson("/api/v1/status", "/gate/lease/holder", h -> h.asText().equals(identity));
                assertFalse(other.permits(), "a warden without the Lease lets no lilbee run");
                assertEquals(List.of(), wardens.lilbee(other).serving());
            }
        }
        // Every warden, standby or leader, reports the last renewal it saw: what WardenLeaseNotRenewed reads.
        for (WardenProcess warden : started) {
            String metrics = warden.text("/q/metrics");
            double age = System.currentTimeMillis() / 1000.0
                    - PromText.value(metrics, "warden_gate_lease_renew_time_seconds").orElseThrow();
            assertTrue(age >= -1 && age < RETRY.multipliedBy(3).toSeconds() + 1, "renewal seen " + age + " s ago\n" + metrics);
            assertEquals(LEASE.toSeconds(), PromText.value(metrics, "warden_gate_lease_duration_seconds").orElseThrow());
        }
        long killed = System.nanoTime();
        leader.process().destroyForcibly();
        leader.process().waitFor(10, TimeUnit.SECONDS);
        wardens.forget(leader);
        awaitStarted("another warden is started");
        Duration handover = Duration.ofNanos(System.nanoTime() - killed);
        // A contender retries with a jitter of up to 1.2 retry periods; the probes are polled, not pushed.
        Duration bound = LEASE.plus(RETRY.multipliedBy(3)).plusSeconds(1);
        assertTrue(handover.compareTo(bound) < 0, "handover took " + handover.toMillis() + " ms\n" + wardens.logs());
        assertEquals(wardens.theOneStarted().orElseThrow().json("/api/v1/status").at("/gate/lease/identity").asText(), holder());
        assertEquals(List.of(), wardens.overlaps(), "two wardens were started at once\n" + wardens.logs());
    }

    /**
     * The API server freezes: the leader steps down (its permits end with its lead, it withdraws them, not ready) and
     * its supervisor SIGTERMs its lilbee, all before the Lease could expire for another warden, whose lilbee never runs
     * meanwhile; thawed, the election goes on and one pod's lilbee serves again.
     */
    @Test
    void aLeaderCutOffFromTheApiServerStepsDownAndFencesItsLilbeeBeforeTheLeaseCanExpire() throws Exception {
        WardenProcess first = wardens.start("first");
        WardenProcess second = wardens.start("second");
        wardens.watchForOverlaps();
        awaitStarted("one warden is started");
        WardenProcess leader = wardens.theOneStarted().orElseThrow();
        long lilbee = wardens.lilbee(leader).serving().getFirst();
        leader.awaitStatus("/q/health/ready", 200);
        long renewedBefore = System.nanoTime();
        plane.pauseApiServer();
        try {
            long paused = System.nanoTime();
            Await.until("the leader's lilbee is gone", Duration.ofSeconds(30),
                    () -> ProcessHandle.of(lilbee).map(p -> !p.isAlive()).orElse(true));
            Duration fenced = Duration.ofNanos(System.nanoTime() - paused);
            // lilbee's supervisor ends it when its permit, which lasts no longer than the lead, runs out; the gate keeper's
            // next round withdraws the permit
            Await.until("no permit once stepped down", Duration.ofSeconds(2), () -> !leader.permits());
            assertEquals(503, leader.status("/q/health/ready"));
            // The last renewal was at most a retry period before the pause: the Lease cannot expire sooner than this.
            Duration earliestExpiry = LEASE.minus(RETRY);
            assertTrue(fenced.compareTo(earliestExpiry) < 0, "lilbee fenced " + fenced.toMillis()
                    + " ms after the API server froze, later than the Lease could expire\n" + leader.log());
            // On warden's own clock: the renew deadline after the last accepted renewal, sent before the freeze
            // (the election's loop alone notices only after the request in flight and its next retry).
            assertTrue(fenced.compareTo(RENEW_DEADLINE.plusMillis(500)) < 0, "stepped down " + fenced.toMillis()
                    + " ms after the freeze, past the renew deadline\n" + leader.log());
            assertTrue(wardens.lilbee(leader).stateLines().contains("term " + lilbee), "SIGTERM first: it had its grace");
            assertTrue(leader.log().contains("Stepped down"), leader.log());
            assertTrue(Duration.ofNanos(System.nanoTime() - renewedBefore).compareTo(Duration.ofSeconds(30)) < 0);
        } finally {
            plane.resumeApiServer();
        }
        awaitStarted("one warden is started again");
        assertEquals(List.of(), wardens.overlaps(), "two wardens were started at once\n" + wardens.logs());
        assertFalse(first.log().contains("Exception in thread"), first.log());
        assertFalse(second.log().contains("Exception in thread"), second.log());
    }

    /**
     * The chart's Roles grant what the election needs and nothing else: get and update on its own Lease, which the chart
     * creates (the wardens above led with that token alone). No create: RBAC cannot name what a create makes. With
     * standbys the chart routes by role, which adds get and update on the Service's one Endpoints (created by the chart
     * too), and the Events add create on events: the token may do those and no more, and nothing at all to a pod.
     */
    @Test
    void theChartsRolesAllowItsOwnLeaseTheServicesEndpointsAndEventsAndNothingElse() throws Exception {
        String own = "leases.coordination.k8s.io/" + LEASE_NAME;
        List<List<String>> allowed = List.of(List.of("get", own), List.of("update", own),
                List.of("get", "endpoints/" + RELEASE + "-warden"), List.of("update", "endpoints/" + RELEASE + "-warden"),
                List.of("create", "events"));
        for (List<String> request : allowed) {
            assertEquals("yes", canI(NAMESPACE, request), request.toString());
        }
        List<List<String>> denied = List.of(List.of("patch", own), List.of("delete", own), List.of("create", "leases.coordination.k8s.io"),
                List.of("create", own), List.of("get", "leases.coordination.k8s.io/another"),
                List.of("update", "leases.coordination.k8s.io/another"), List.of("patch", "leases.coordination.k8s.io/another"),
                List.of("list", "leases.coordination.k8s.io"), List.of("list", "pods"), List.of("watch", "pods"),
                List.of("get", "pods"), List.of("update", "pods"), List.of("patch", "pods"), List.of("create", "pods"),
                List.of("delete", "pods"), List.of("patch", "endpoints/" + RELEASE + "-warden"),
                List.of("get", "endpoints/another"), List.of("update", "endpoints/another"), List.of("create", "endpoints"),
                List.of("update", "endpointslices.discovery.k8s.io"), List.of("update", "services/" + RELEASE + "-warden"),
                List.of("get", "events"),
                List.of("patch", "events"), List.of("delete", "events"), List.of("get", "secrets"),
                List.of("get", "configmaps"), List.of("patch", "deployments.apps"));
        for (List<String> request : denied) {
            assertEquals("no", canI(NAMESPACE, request), request.toString());
        }
        assertEquals("no", canI("default", List.of("get", "leases.coordination.k8s.io")), "only in its own namespace");
        assertEquals("no", canI("default", List.of("get", "pods")), "only in its own namespace");
    }

    /** What {@code kubectl auth can-i} answers for the chart's ServiceAccount in {@code namespace}: yes or no. */
    private String canI(String namespace, List<String> request) throws Exception {
        List<String> args = new ArrayList<>(List.of("-n", namespace, "auth", "can-i"));
        args.addAll(request);
        args.add("--as=system:serviceaccount:" + NAMESPACE + ":" + RELEASE + "-warden-gate");
        return plane.kubectl(null, args.toArray(String[]::new)).output().trim();
    }

    /**
     * A warden with the chart's token, told another Lease's name, can neither make it nor take one an admin made: the API
     * server refuses, the warden says which Lease and what to do, and leads nothing.
     */
    @Test
    void aWardenWithTheChartsRoleCannotCreateOrTakeAnotherLease() throws Exception {
        plane.ok(String.join("\n", "apiVersion: coordination.k8s.io/v1", "kind: Lease", "metadata: {name: another}",
                "spec: {leaseDurationSeconds: 8}", ""), "apply", "-n", NAMESPACE, "-f", "-");
        // Leases the chart did not make
        try (LeaseWardens missing = contending("missing", dir.resolve("missing"), "missing");
                LeaseWardens another = contending("another", dir.resolve("another"), "another")) {
            WardenProcess creator = missing.start("creator");
            WardenProcess taker = another.start("taker");
            // It may not even read the Lease it would make, so it never gets as far as asking to create it.
            Await.until("the creator is told it may not read the Lease", Duration.ofSeconds(30),
                    () -> creator.log().contains("The Lease " + NAMESPACE + "/missing may not be read by this warden"));
            Await.until("the taker is told it may not read the Lease", Duration.ofSeconds(30),
                    () -> taker.log().contains("The Lease " + NAMESPACE + "/another may not be read by this warden"));
            assertEquals("", plane.poll("-n", NAMESPACE, "get", "lease", "missing", "--ignore-not-found", "-o", "name")
                    .orElse(""), "no Lease was created");
            assertEquals("", lease("another", ".spec.holderIdentity"), "the other Lease is untouched");
            for (WardenProcess warden : List.of(creator, taker)) {
                assertFalse(warden.permits(), warden.log());
                assertEquals(503, warden.status("/q/health/ready"));
            }
        } finally {
            plane.kubectl(null, "-n", NAMESPACE, "delete", "lease", "another", "--ignore-not-found");
        }
    }

    /**
     * {@code helm upgrade} leaves the holder of the chart's Lease alone (the chart sets only its duration); a Lease deleted
     * under the leader fences it (its Role cannot make the Lease again), and the next upgrade brings it back.
     */
    @Test
    void anUpgradeKeepsTheHolderAndBringsBackADeletedLease() throws Exception {
        wardens.start("only");
        awaitStarted("the warden is started");
        WardenProcess leader = wardens.theOneStarted().orElseThrow();
        String transitions = lease(LEASE_NAME, ".spec.leaseTransitions");
        helm("upgrade", "--set", "replicas=2");
        assertEquals("only", holder(), "the upgrade kept the holder");
        assertEquals(transitions, lease(LEASE_NAME, ".spec.leaseTransitions"));
        assertTrue(leader.permits(), leader.log());

        plane.ok(null, "-n", NAMESPACE, "delete", "lease", LEASE_NAME);
        Await.until("the leader steps down", Duration.ofSeconds(30), () -> !leader.permits());
        Await.until("it says what to do", Duration.ofSeconds(30), () -> leader.log().contains("helm upgrade creates it again"));
        helm("upgrade");
        awaitStarted("it leads again");
        assertEquals("only", holder());
    }

    /**
     * A release of an earlier chart, whose wardens made the Lease themselves: the Lease is not helm's, so {@code helm
     * upgrade} refuses to take it over until it is labelled and annotated as docs/deploying.md says, and then keeps its
     * holder. A release of its own, first installed in file mode (no Lease), stands for the earlier chart.
     */
    @Test
    void aLeaseAnEarlierWardenMadeIsTakenOverOnceMarkedAsTheReleases() throws Exception {
        String earlier = "earlier";
        String name = earlier + "-warden-gate";
        try {
            Command.Run installed = helmRun("install", earlier, "--set", "gate.election=file");
            assertEquals(0, installed.exitCode(), installed.output());
            plane.ok(String.join("\n", "apiVersion: coordination.k8s.io/v1", "kind: Lease", "metadata: {name: " + name + "}",
                    "spec: {holderIdentity: pod-a, leaseDurationSeconds: 15, leaseTransitions: 3}", ""), "apply", "-n", NAMESPACE, "-f", "-");
            Command.Run refused = helmRun("upgrade", earlier);
            assertTrue(refused.exitCode() != 0 && refused.output().contains("invalid ownership metadata"), refused.output());
            plane.ok(null, "-n", NAMESPACE, "label", "lease", name, "app.kubernetes.io/managed-by=Helm");
            plane.ok(null, "-n", NAMESPACE, "annotate", "lease", name, "meta.helm.sh/release-name=" + earlier,
                    "meta.helm.sh/release-namespace=" + NAMESPACE);
            Command.Run upgraded = helmRun("upgrade", earlier);
            assertEquals(0, upgraded.exitCode(), upgraded.output());
            assertEquals("pod-a", lease(name, ".spec.holderIdentity"));
            assertEquals("3", lease(name, ".spec.leaseTransitions"));
        } finally {
            KubernetesTypesInteropIT.run("", KubernetesTypesInteropIT.tool("helm"), "uninstall", earlier, "--namespace", NAMESPACE,
                    "--kubeconfig", plane.kubeconfig().toString());
            plane.kubectl(null, "-n", NAMESPACE, "delete", "lease", name, "--ignore-not-found");
        }
    }

    /** Wardens with the chart's token, on data roots under {@code root}, contending for the Lease {@code name}. */
    private static LeaseWardens contending(String prefix, Path root, String name) {
        return new LeaseWardens(prefix, tokenConfig, root, List.of("-Dwarden.gate.lease.name=" + name,
                "-Dwarden.gate.lease.duration=" + LEASE.toSeconds() + "s",
                "-Dwarden.gate.lease.renew-deadline=" + RENEW_DEADLINE.toSeconds() + "s",
                "-Dwarden.gate.lease.retry-period=" + RETRY.toSeconds() + "s", "-Dwarden.gate.supervisor.stall-bound=1s"));
    }
}
