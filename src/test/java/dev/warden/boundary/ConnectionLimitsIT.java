package dev.warden.boundary;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.warden.lock.FileLocker;
import dev.warden.testing.Await;
import dev.warden.testing.ConnectionFlood;
import dev.warden.testing.ImageJvm;
import dev.warden.testing.PodNetwork;
import dev.warden.testing.WardenProcess;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * warden in a network namespace of its own, as in a pod: a neighbour container floods its two ports
 * from inside the pod (loopback and the pod's address), and the kubelet probes from the node's side of
 * a veth pair. The neighbour gets its share and no more, trickled requests are closed at their deadline,
 * and the kubelet's probes answer within their one-second timeout throughout, under the 1,024
 * descriptors a container often gets.
 */
class ConnectionLimitsIT {

    /** The kubelet's default probe timeout. */
    private static final int PROBE_TIMEOUT_MS = 1000;
    /** The chart's memory limit for warden (192 Mi). */
    private static final long CHART_LIMIT_KIB = 192 * 1024;

    @TempDir
    Path dir;

    @BeforeEach
    void root() {
        Assumptions.assumeTrue("0".equals(FileLocker.currentUid()),
                "SKIPPED: a network namespace and a veth pair need root (CI runs as root)");
    }

    private WardenProcess warden(PodNetwork pod, List<String> prefix, String name, List<String> settings) throws IOException {
        List<String> all = new ArrayList<>(ImageJvm.flags());
        all.addAll(settings);
        return WardenProcess.serveIn(pod, prefix, name, all, "--data-root", dir.resolve(name).toString(), "--engine-dir",
                dir.resolve(name + "-engine").toString());
    }

    /** A kubelet probe of warden's management port from the node. */
    private static int probe(PodNetwork pod, WardenProcess warden, String path) {
        return ConnectionFlood.probe(pod.podAddress(), warden.managementPort(), path, PROBE_TIMEOUT_MS);
    }

    @Test
    void aNeighbourFloodingBothPortsGetsItsShareAndTheKubeletsProbesStillAnswer() throws Exception {
        try (PodNetwork pod = PodNetwork.create();
                WardenProcess warden = warden(pod, List.of("prlimit", "--nofile=1024:1024", "--"), "flooded", List.of())) {
            warden.awaitStatus("/q/health/started", 200);
            int probes = 0;
            long slowest = 0;
            JsonNode report;
            try (ConnectionFlood flood = ConnectionFlood.start(pod, 8, "127.0.0.1:" + warden.port() + ":600:flood",
                    "127.0.0.1:" + warden.managementPort() + ":600:flood")) {
                for (long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(6); System.nanoTime() < end; probes++) {
                    long start = System.nanoTime();
                    assertEquals(200, probe(pod, warden, "/q/health/live"),
                            "probe " + probes + " answered within " + PROBE_TIMEOUT_MS + " ms\n" + warden.log());
                    assertEquals(200, probe(pod, warden, "/q/health/started"));
                    slowest = Math.max(slowest, System.nanoTime() - start);
                    Thread.sleep(100);
                }
                long rss = ImageJvm.rssKb(warden.pid());
                assertTrue(rss < CHART_LIMIT_KIB, "under the chart's memory limit: " + rss + " KiB");
                report = flood.report();
            }
            for (JsonNode target : report) {
                assertEquals(32, target.path("held").asInt(), "the neighbour holds its share and no more: " + target);
                assertTrue(target.path("refused").asInt() > 1000, "the rest is refused as it comes: " + target);
            }
            assertTrue(probes > 20, "probed throughout: " + probes);
            assertTrue(warden.process().isAlive() && !warden.log().contains("Too many open files"), warden.log());
            System.out.printf("%d probe pairs answered under the flood, the slowest pair in %d ms%n", probes,
                    TimeUnit.NANOSECONDS.toMillis(slowest));
        }
    }

    @Test
    void aRequestTrickledByteByByteIsClosedAtItsDeadline() throws Exception {
        try (PodNetwork pod = PodNetwork.create();
                WardenProcess warden = warden(pod, List.of(), "trickled", List.of("-Dwarden.http.request-header-timeout=2s"))) {
            warden.awaitStatus("/q/health/started", 200);
            JsonNode report;
            // From the pod's own address this time: the same peer as loopback.
            try (ConnectionFlood trickle = ConnectionFlood.start(pod, 6, pod.podAddress() + ":" + warden.port() + ":20:trickle",
                    pod.podAddress() + ":" + warden.managementPort() + ":20:trickle")) {
                report = trickle.report();
            }
            for (JsonNode target : report) {
                assertEquals(0, target.path("held").asInt(), "every trickling connection was closed: " + target);
                assertEquals(0, target.path("refused").asInt(), "none was refused at the connect: " + target);
                double longest = target.path("longest").asDouble();
                assertTrue(longest >= 1.9 && longest < 4, "closed at the 2 s deadline, not kept by its bytes: " + target);
            }
            assertEquals(200, probe(pod, warden, "/q/health/live"));
        }
    }

    /**
     * Four times as many peers outside the pod as the total holds shares of (32 of 32 each: other pods of the node, or
     * one pod holding many addresses), each holding all it can on the management port: they get the total less the
     * node's share between them, and the kubelet's probes from the node answer throughout.
     */
    @Test
    void theKubeletsProbesAnswerWhileFourTimesTheCapsNumberOfOtherPeersHoldTheirShares() throws Exception {
        int total = 256;
        int share = 32;
        try (PodNetwork pod = PodNetwork.create();
                WardenProcess warden = warden(pod, List.of("prlimit", "--nofile=1024:1024", "--"), "crowded", List.of())) {
            warden.awaitStatus("/q/health/started", 200);
            List<String> targets = pod.otherPeers(4 * total / share).stream()
                    .map(peer -> pod.podAddress() + ":" + warden.managementPort() + ":" + (share + 8) + ":flood:" + peer).toList();
            int probes = 0;
            JsonNode report;
            try (ConnectionFlood flood = ConnectionFlood.fromOutside(6, targets.toArray(String[]::new))) {
                for (long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5); System.nanoTime() < end; probes++) {
                    assertEquals(200, probe(pod, warden, "/q/health/live"),
                            "probe " + probes + " from the node answered within " + PROBE_TIMEOUT_MS + " ms\n" + warden.log());
                    Thread.sleep(100);
                }
                report = flood.report();
            }
            int held = 0;
            for (JsonNode peer : report) {
                assertTrue(peer.path("held").asInt() <= share, "no peer past its share: " + peer);
                held += peer.path("held").asInt();
            }
            assertEquals(total - share, held, "the other peers hold the total less the node's share, no more: " + report);
            assertTrue(probes > 30, "the probes ran throughout: " + probes);
        }
    }

    /**
     * The node holding its share as well as eight peers outside the pod theirs: exactly the total is open, a probe past
     * it is refused, and that many idle connections on each port stay under the chart's memory limit.
     */
    @Test
    void theTotalCapHoldsAndACapsWorthOfIdleConnectionsStaysUnderTheChartsMemoryLimit() throws Exception {
        try (PodNetwork pod = PodNetwork.create(); WardenProcess warden = warden(pod, List.of(), "capped", List.of())) {
            // Probes that close their connection: a pooled one left open would take one of the 256 places.
            Await.until("warden started", () -> probe(pod, warden, "/q/health/started") == 200);
            List<String> targets = new ArrayList<>();
            for (String peer : pod.otherPeers(8)) {
                for (int port : new int[] {warden.port(), warden.managementPort()}) {
                    targets.add(pod.podAddress() + ":" + port + ":40:flood:" + peer);
                }
            }
            for (int port : new int[] {warden.port(), warden.managementPort()}) {
                targets.add(pod.podAddress() + ":" + port + ":40:flood:" + pod.nodeAddress());
            }
            long rss;
            JsonNode report;
            try (ConnectionFlood flood = ConnectionFlood.fromOutside(4, targets.toArray(String[]::new))) {
                Thread.sleep(1000);
                rss = ImageJvm.rssKb(warden.pid());
                assertEquals(-1, probe(pod, warden, "/q/health/live"),
                        "the total counts every peer: with 256 open, the node's share among them, a probe is refused too");
                report = flood.report();
            }
            for (int port : new int[] {warden.port(), warden.managementPort()}) {
                String target = pod.podAddress() + ":" + port;
                int held = 0;
                for (JsonNode peer : report) {
                    if (peer.path("target").asText().equals(target)) {
                        held += peer.path("held").asInt();
                        if (peer.path("source").asText().equals(pod.nodeAddress())) {
                            assertEquals(32, peer.path("held").asInt(), "the node holds its share: " + peer);
                        }
                    }
                }
                assertEquals(256, held, "exactly the cap is open on " + target + ": " + report);
            }
            assertTrue(rss < CHART_LIMIT_KIB, "512 idle connections: " + rss + " KiB");
            System.out.printf("VmRSS with 256 idle connections on each port: %d KiB%n", rss);
        }
    }

    @Test
    void withoutATokenTheStatusAnswersOnlyFromInsideThePod() throws Exception {
        try (PodNetwork pod = PodNetwork.create(); WardenProcess warden = warden(pod, List.of(), "status", List.of())) {
            warden.awaitStatus("/q/health/started", 200);
            var fromNode = warden.get("/api/v1/status", null);
            assertEquals(403, fromNode.statusCode(), fromNode.body());
            assertTrue(fromNode.body().contains("answers only on loopback"), fromNode.body());
            assertTrue(!fromNode.body().contains(dir.toString()), "no path in the refusal: " + fromNode.body());
            List<String> curl = new ArrayList<>(pod.enter());
            curl.addAll(List.of("python3", "-c", "import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1]).status)",
                    "http://127.0.0.1:" + warden.port() + "/api/v1/status"));
            Process inside = new ProcessBuilder(curl).redirectErrorStream(true).start();
            assertEquals("200", new String(inside.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip(),
                    "from the pod's loopback it answers");
            inside.waitFor(10, TimeUnit.SECONDS);
        }
    }
}
