package dev.warden.bench;

import static dev.warden.bench.TakeoverBench.row;
import static dev.warden.bench.TakeoverBench.stats;

import dev.warden.testing.ClusterRelease;
import dev.warden.testing.InteropTools;
import dev.warden.testing.KubeletCluster;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Figures 11 and 12: failover on a real kubelet ({@link KubeletCluster}, two nodes), the chart installed with helm as a
 * user would, per mode and kind of kill; and figure 7's question again without a test kubelet: gate mode with the
 * reference lilbee image against bare lilbee replicas, which the kubelet's CrashLoopBackOff paces. Each round waits for
 * one pod serving and one standing by, waits a seeded random moment (up to 30 s: where in the standby's back-off the
 * fault lands), then kills, and times until another pod, or the same one, is Ready and the Service's one ready
 * endpoint, as the API server reports them. Two methods, so each figure can be run alone (figure 12's bare rows wait
 * out the kubelet's back-off: most of an hour).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class KubeletFailoverBench {

    /** The random wait before each kill: up to this long (CI's short run waits less). */
    private static final int RANDOM_WINDOW_MS = Integer.getInteger("warden.bench.kubelet-random-ms", 30_000);
    private static final String NODE1 = ClusterRelease.NODE1;

    /** Seeded again for each figure, so that a figure run alone waits as it does beside the other. */
    private Random random;
    /** One cluster for both figures: a cluster's start and its images' import are minutes of CI's short run. */
    private KubeletCluster cluster;

    @BeforeAll
    void cluster() throws Exception {
        cluster = KubeletCluster.start(Path.of(InteropTools.path("control-plane")), Path.of(InteropTools.path("node-images")),
                Path.of("target/kubelet-bench").toAbsolutePath(), 2);
    }

    @BeforeEach
    void seed() {
        random = new Random(11);
    }

    @AfterAll
    void stopTheCluster() throws Exception {
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    void failoverPerModeOnARealKubelet() throws Exception {
        int rounds = Integer.getInteger("warden.bench.kubelet-rounds", 10);
        List<String> rows = new ArrayList<>();
        List<String> installs = new ArrayList<>();
        try (ClusterRelease hold = ClusterRelease.helm(cluster, helm(), "hold", List.of(), NODE1)) {
            installs.add(seconds("hold", hold.installed()));
            rows.add(row("hold: the serving pod force-deleted", failovers(hold, rounds, hold::forceDelete), "-"));
            rows.add(row("hold: the serving pod's warden SIGKILLed (llama-swap runs on in it)",
                    failovers(hold, rounds, pod -> {
                        hold.tolerateStaleReady(pod, Duration.ofSeconds(2));
                        hold.kill(pod, "warden", "KILL");
                    }), "-"));
        }
        try (ClusterRelease leased = ClusterRelease.helm(cluster, helm(), "gate-lease", ClusterRelease.GATE_LEASE, null)) {
            installs.add(seconds("gate with a Lease", leased.installed()));
            rows.add(row("gate, Lease across two nodes: the serving pod force-deleted",
                    failovers(leased, rounds, leased::forceDelete), "-"));
            // Restarted in place under the same identity, it goes on from its previous run's renewal of the Lease
            // and adopts its lilbee: the same pod serves again.
            rows.add(row("gate, Lease across two nodes: the serving warden SIGKILLed (restarted in place)",
                    restarts(leased, rounds, pod -> leased.kill(pod, "warden", "KILL")), "-"));
        }
        Report.section("11. Failover on a real kubelet",
                "A real cluster on this machine (src/test/kubernetes/node-up.sh: kubelet, containerd, kube-proxy v1.37.2, two"
                        + " nodes), the chart installed with helm (warden's " + flavour() + " image), 2 replicas on one"
                        + " ReadWriteMany hostPath claim; hold on one"
                        + " node with the real llama-swap, gate mode's Lease across both with the reference lilbee image (gate"
                        + " mode on one node is figure 12). " + ROUND + " helm install to the first pod Ready: "
                        + String.join(", ", installs) + ".",
                HEADER, rows);
    }

    @Test
    void gatedAgainstBareLilbeeOnARealKubelet() throws Exception {
        int rounds = Integer.getInteger("warden.bench.kubelet-lilbee-rounds", 20);
        List<String> rows = new ArrayList<>();
        List<String> installs = new ArrayList<>();
        List<Long> goMicros = new ArrayList<>();
        try (ClusterRelease gate = ClusterRelease.helm(cluster, helm(), "gate", ClusterRelease.GATE_DEFAULT, NODE1)) {
            installs.add(seconds("gate", gate.installed()));
            rows.add(row("gated by warden: the serving pod force-deleted",
                    rounds(gate, rounds, () -> goToListening(gate, gate.failover("a kill", gate::forceDelete), goMicros)),
                    Integer.toString(gate.watch().exits("lilbee", 3))));
            // The process, as a crash or the kernel's OOM killer ends it: its container's command starts it again.
            rows.add(row("gated by warden: the serving lilbee SIGKILLed (started again in its pod)",
                    rounds(gate, rounds, () -> goToListening(gate, gate.servesAgain(gate::killLilbee), goMicros)),
                    Integer.toString(gate.watch().exits("lilbee", 3))));
            if (goMicros.isEmpty()) {
                throw new AssertionError("no lilbee start to listening found in lilbee's container logs");
            }
            rows.add(row("gated by warden: from warden's go to lilbee listening, each failover above (a warm start: the"
                    + " supervisor's log line to lilbee's, container log timestamps)",
                    stats(goMicros.stream().mapToLong(Long::longValue).toArray()), "-"));
        }
        try (ClusterRelease bare = ClusterRelease.manifests(cluster, "bare", bareLilbee(), "app=bare-lilbee", "bare-lilbee")) {
            installs.add(seconds("bare lilbee", bare.installed()));
            rows.add(row("bare lilbee replicas: the serving pod force-deleted", failovers(bare, rounds, bare::forceDelete),
                    Integer.toString(bare.watch().exits("lilbee", 3))));
            rows.add(row("bare lilbee replicas: the serving lilbee SIGKILLed (the kubelet restarts it)",
                    restarts(bare, rounds, pod -> bare.kill(pod, "lilbee", "KILL")),
                    Integer.toString(bare.watch().exits("lilbee", 3))));
        }
        Report.section("12. lilbee failover on a real kubelet",
                "Figure 7's question without the test kubelet: the real cluster of figure 11, one node, 2 replicas on one"
                        + " ReadWriteMany hostPath claim of the reference lilbee image (the real `lilbee serve` 0.6.90b449)."
                        + " Gated: the chart in gate mode as it installs by default (warden as the native sidecar, its " + flavour()
                        + " image; clients routed by role, through the Service's Endpoints, which the serving pod's warden"
                        + " writes once its lilbee answers; lilbee's"
                        + " supervisor runs lilbee only while warden's permit lasts and starts it again at once, on warden's word,"
                        + " when it dies; a warm standby and a spare in the serving pod: lilbee's modules loaded in a process the"
                        + " supervisor prepared, where lilbee runs on the go; a stepped-down warden unlocks the gate for its lilbee"
                        + " once that has let server.lock go). Bare: lilbee alone, ready once it listens (a"
                        + " tcpSocket probe); the standby's lilbee exits 3 after waiting 15 s for server.lock and the kubelet's"
                        + " CrashLoopBackOff restarts it (10 s doubling to 5 minutes), as it restarts a killed lilbee. " + ROUND
                        + " helm install (or kubectl apply) to the first pod Ready: " + String.join(", ", installs) + ".",
                HEADER, rows);
    }

    private static final String ROUND = "Each round: one pod serving and one standing by, then a seeded random wait of up to "
            + RANDOM_WINDOW_MS / 1000 + " s (where in the standby's life the fault lands), then the kill; time until a pod"
            + " (another, or the same one) is Ready and the Service's one ready endpoint, from a watch of the API server.";
    private static final List<String> HEADER = List.of("| failover | median ms | p99 ms | min ms | max ms | rounds | lilbee exits 3 |",
            "|---|---|---|---|---|---|---|");

    private static String flavour() {
        return ClusterRelease.wardenFlavour().equals("native") ? "native" : "JVM";
    }

    private static String helm() {
        return InteropTools.path("helm");
    }

    /** One measurement of a kill, from steady. */
    private interface Measure {
        Duration take() throws Exception;
    }

    /** {@code rounds} times: steady, a random wait, {@code measure}; never two serving meanwhile. */
    private long[] rounds(ClusterRelease release, int rounds, Measure measure) throws Exception {
        long[] micros = new long[rounds];
        for (int round = 0; round < rounds; round++) {
            release.steady();
            Thread.sleep(random.nextInt(RANDOM_WINDOW_MS));
            micros[round] = measure.take().toNanos() / 1000;
        }
        release.noOverlap();
        return stats(micros);
    }

    /** {@code took}, after noting how long the serving pod's newest lilbee took from warden's go to listening. */
    private static Duration goToListening(ClusterRelease gate, Duration took, List<Long> goMicros) {
        List<Duration> starts = gate.goToListening(gate.servingPod());
        if (!starts.isEmpty()) {
            goMicros.add(starts.getLast().toNanos() / 1000);
        }
        return took;
    }

    /** The serving pod killed by {@code kill}: until another pod serves. */
    private long[] failovers(ClusterRelease release, int rounds, ClusterRelease.Kill kill) throws Exception {
        return rounds(release, rounds, () -> release.failover("a kill", kill));
    }

    /** The serving pod hit by {@code kill}: until a pod serves again (the same one, or another). */
    private long[] restarts(ClusterRelease release, int rounds, ClusterRelease.Kill kill) throws Exception {
        return rounds(release, rounds, () -> release.servesAgain(kill));
    }

    private static String seconds(String what, Duration took) {
        return String.format(Locale.ROOT, "%s %.1f s", what, took.toMillis() / 1000.0);
    }

    /** lilbee alone, as users run it without warden: 2 replicas on one data root, ready once it listens. */
    private static String bareLilbee() {
        return """
                apiVersion: apps/v1
                kind: Deployment
                metadata: {name: bare-lilbee}
                spec:
                  replicas: 2
                  selector: {matchLabels: {app: bare-lilbee}}
                  template:
                    metadata: {labels: {app: bare-lilbee}}
                    spec:
                      automountServiceAccountToken: false
                      nodeSelector: {kubernetes.io/hostname: %s}
                      securityContext: {runAsNonRoot: true, runAsUser: 1001, runAsGroup: 1001, fsGroup: 1001, seccompProfile: {type: RuntimeDefault}}
                      containers:
                        - name: lilbee
                          image: localhost/lilbee:0.6.90b449
                          imagePullPolicy: Never
                          args: [serve, --host, 0.0.0.0, --port, "8080"]
                          env:
                            - {name: LILBEE_DATA, value: /var/lib/lilbee}
                            - {name: HOME, value: /home/lilbee}
                          ports: [{name: http, containerPort: 8080}]
                          readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1, failureThreshold: 1}
                          securityContext:
                            readOnlyRootFilesystem: true
                            allowPrivilegeEscalation: false
                            capabilities: {drop: [ALL]}
                          volumeMounts:
                            - {name: shared, mountPath: /var/lib/lilbee}
                            - {name: home, mountPath: /home/lilbee}
                            - {name: tmp, mountPath: /tmp}
                      volumes:
                        - {name: shared, persistentVolumeClaim: {claimName: shared-lilbee}}
                        - {name: home, emptyDir: {}}
                        - {name: tmp, emptyDir: {}}
                ---
                apiVersion: v1
                kind: Service
                metadata: {name: bare-lilbee}
                spec:
                  selector: {app: bare-lilbee}
                  ports: [{name: http, port: 8080, targetPort: 8080}]
                """.formatted(NODE1);
    }
}
