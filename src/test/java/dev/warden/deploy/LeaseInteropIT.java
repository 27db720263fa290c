package dev.warden.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.Await;
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

    /** The control plane, and the chart's ServiceAccount, Role and RoleBinding for lease mode applied to it. */
    @BeforeAll
    static void controlPlaneAndTheChartsRole() throws Exception {
        Path bin = Path.of(KubernetesTypesInteropIT.tool("control-plane"));
        plane = ControlPlane.start(bin, Files.createTempDirectory("warden-lease"));
        plane.restrictedNamespace(NAMESPACE);
        String rendered = KubernetesTypesInteropIT.accepted("", KubernetesTypesInteropIT.tool("helm"), "template", RELEASE,
                "helm/warden", "-f", "helm/warden/ci/gate-lease-values.yaml", "--namespace", NAMESPACE,
                "--show-only", "templates/serviceaccount.yaml").output();
        plane.ok(rendered, "apply", "--server-side", "-n", NAMESPACE, "-f", "-");
        String token = plane.ok(null, "create", "token", "-n", NAMESPACE, RELEASE + "-warden-gate").trim();
        tokenConfig = Files.createTempFile("warden-lease", ".kubeconfig");
        String admin = Files.readString(plane.kubeconfig());
        // The admin's kubeconfig with the ServiceAccount's token in place of the admin's certificate.
        String server = admin.lines().filter(l -> l.trim().startsWith("server:")).findFirst().orElseThrow().trim();
        String ca = admin.lines().filter(l -> l.trim().startsWith("certificate-authority")).findFirst().orElseThrow().trim();
        Files.writeString(tokenConfig, String.join("\n", "apiVersion: v1", "kind: Config", "clusters:",
                "- name: test", "  cluster:", "    " + server, "    " + ca, "users:", "- name: gate",
                "  user:", "    token: " + token, "contexts:", "- name: gate", "  context:", "    cluster: test",
                "    user: gate", "    namespace: " + NAMESPACE, "current-context: gate", ""));
    }

    @AfterAll
    static void stopThePlane() throws Exception {
        if (plane != null) {
            plane.close();
        }
    }

    @BeforeEach
    void wardens() {
        wardens = new LeaseWardens("lease", tokenConfig, dir, List.of("-Dwarden.gate.lease.name=" + LEASE_NAME,
                "-Dwarden.gate.lease.duration=" + LEASE.toSeconds() + "s",
                "-Dwarden.gate.lease.renew-deadline=" + RENEW_DEADLINE.toSeconds() + "s",
                "-Dwarden.gate.lease.retry-period=" + RETRY.toSeconds() + "s", "-Dwarden.gate.supervisor.grace=1s",
                "-Dwarden.gate.supervisor.stall-bound=1s"));
    }

    @AfterEach
    void stopWardens() throws Exception {
        wardens.close();
        plane.kubectl(null, "-n", NAMESPACE, "delete", "lease", LEASE_NAME, "--ignore-not-found");
    }

    private String holder() {
        return plane.poll("-n", NAMESPACE, "get", "lease", LEASE_NAME, "-o", "jsonpath={.spec.holderIdentity}").orElse("");
    }

    @Test
    void threeWardensElectExactlyOneAndAKilledLeaderIsReplacedWithinTheLeasePlusARetry() throws Exception {
        List<WardenProcess> started = new ArrayList<>();
        for (String identity : List.of("a", "b", "c")) {
            started.add(wardens.start(identity));
        }
        wardens.watchForOverlaps();
        Await.until("one warden is started", Duration.ofSeconds(60), () -> wardens.theOneStarted().isPresent());
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
        Await.until("another warden is started", Duration.ofSeconds(60), () -> wardens.theOneStarted().isPresent());
        Duration handover = Duration.ofNanos(System.nanoTime() - killed);
        // fabric8 retries with a jitter of up to 1.2 retry periods; the probes are polled, not pushed.
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
        Await.until("one warden is started", Duration.ofSeconds(60), () -> wardens.theOneStarted().isPresent());
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
            assertFalse(leader.permits(), "no permit once stepped down\n" + leader.log());
            assertEquals(503, leader.status("/q/health/ready"));
            // The last renewal was at most a retry period before the pause: the Lease cannot expire sooner than this.
            Duration earliestExpiry = LEASE.minus(RETRY);
            assertTrue(fenced.compareTo(earliestExpiry) < 0, "lilbee fenced " + fenced.toMillis()
                    + " ms after the API server froze, later than the Lease could expire\n" + leader.log());
            // On warden's own clock: the renew deadline after the last accepted renewal, sent before the freeze
            // (fabric8's elector alone notices only after the request in flight and its next retry).
            assertTrue(fenced.compareTo(RENEW_DEADLINE.plusMillis(500)) < 0, "stepped down " + fenced.toMillis()
                    + " ms after the freeze, past the renew deadline\n" + leader.log());
            assertTrue(wardens.lilbee(leader).stateLines().contains("term " + lilbee), "SIGTERM first: it had its grace");
            assertTrue(leader.log().contains("Stepped down"), leader.log());
            assertTrue(Duration.ofNanos(System.nanoTime() - renewedBefore).compareTo(Duration.ofSeconds(30)) < 0);
        } finally {
            plane.resumeApiServer();
        }
        Await.until("one warden is started again", Duration.ofSeconds(60), () -> wardens.theOneStarted().isPresent());
        assertEquals(List.of(), wardens.overlaps(), "two wardens were started at once\n" + wardens.logs());
        assertFalse(first.log().contains("Exception in thread"), first.log());
        assertFalse(second.log().contains("Exception in thread"), second.log());
    }

    /**
     * The chart's Role grants what the election needs and nothing else: create on Leases, get, update and
     * patch on its own Lease (the wardens above led with that token alone; without patch, fabric8's renewal
     * was refused: the first run of these tests).
     */
    @Test
    void theChartsRoleAllowsItsOwnLeaseAndNothingElse() throws Exception {
        String as = "--as=system:serviceaccount:" + NAMESPACE + ":" + RELEASE + "-warden-gate";
        String own = "leases.coordination.k8s.io/" + LEASE_NAME;
        for (List<String> allowed : List.of(List.of("get", own), List.of("update", own), List.of("patch", own),
                List.of("create", "leases.coordination.k8s.io"))) {
            List<String> args = new ArrayList<>(List.of("-n", NAMESPACE, "auth", "can-i"));
            args.addAll(allowed);
            args.add(as);
            assertEquals("yes", plane.kubectl(null, args.toArray(String[]::new)).output().trim(), allowed.toString());
        }
        for (List<String> denied : List.of(List.of("delete", own), List.of("get", "leases.coordination.k8s.io/another"),
                List.of("update", "leases.coordination.k8s.io/another"), List.of("patch", "leases.coordination.k8s.io/another"),
                List.of("list", "leases.coordination.k8s.io"),
                List.of("get", "pods"), List.of("get", "secrets"), List.of("create", "pods"), List.of("get", "configmaps"))) {
            List<String> args = new ArrayList<>(List.of("-n", NAMESPACE, "auth", "can-i"));
            args.addAll(denied);
            args.add(as);
            assertEquals("no", plane.kubectl(null, args.toArray(String[]::new)).output().trim(), denied.toString());
        }
        assertEquals("no", plane.kubectl(null, "-n", "default", "auth", "can-i", "get", "leases.coordination.k8s.io", as)
                .output().trim(), "only in its own namespace");
    }
}
