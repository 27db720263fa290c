package dev.warden.bench;

import dev.warden.lock.FileLocker;
import dev.warden.testing.ConnectionFlood;
import dev.warden.testing.ImageJvm;
import dev.warden.testing.PodNetwork;
import dev.warden.testing.WardenProcess;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The kubelet's probe while a neighbour container holds its share of warden's connections: warden (the
 * image's JVM flags, 1,024 descriptors) in a network namespace of its own, the neighbour flooding both
 * ports from the pod's loopback, the probes coming from the node's side of a veth pair, each on a new
 * connection as the kubelet's are.
 */
class ProbeFloodBench {

    private static final int PROBES = Integer.getInteger("warden.bench.flood-probes", 300);
    private static final int TIMEOUT_MS = 1000;

    @TempDir
    Path dir;

    @Test
    void probesUnderAConnectionFlood() throws Exception {
        Assumptions.assumeTrue("0".equals(FileLocker.currentUid()), "a network namespace needs root");
        List<String> rows = new ArrayList<>();
        try (PodNetwork pod = PodNetwork.create();
                WardenProcess warden = WardenProcess.serveIn(pod, List.of("prlimit", "--nofile=1024:1024", "--"), "bench-flood",
                        ImageJvm.flags(),
                        "--data-root", dir.resolve("root").toString(), "--engine-dir", dir.resolve("engine").toString())) {
            warden.awaitStatus("/q/health/started", 200);
            measure(pod, warden);
            rows.add(row("quiet", measure(pod, warden)));
            double seconds = PROBES * 0.05 + 30;
            try (ConnectionFlood flood = ConnectionFlood.start(pod, seconds, "127.0.0.1:" + warden.port() + ":600:flood",
                    "127.0.0.1:" + warden.managementPort() + ":600:flood")) {
                rows.add(row("a neighbour holding its 32 a port and reopening 568 more a port as each is refused",
                        measure(pod, warden)));
            }
            try (ConnectionFlood trickle = ConnectionFlood.start(pod, seconds, "127.0.0.1:" + warden.port() + ":32:retrickle",
                    "127.0.0.1:" + warden.managementPort() + ":32:retrickle")) {
                rows.add(row("a neighbour trickling a request line on its 32 a port, reconnecting as each meets its deadline",
                        measure(pod, warden)));
            }
        }
        Report.section("10. Probes under a connection flood",
                "warden (`serve`, the image's JVM flags, 1,024 descriptors) in a network namespace of its own, as in a pod;"
                        + " " + PROBES + " probes of `/q/health/live` from the node's side of a veth pair, each on a new"
                        + " connection with the kubelet's one-second timeout, 50 ms apart, after as many unmeasured; the neighbour floods both ports from"
                        + " the pod's loopback (warden.http.max-connections-per-peer is 32).",
                List.of("| neighbour | answered | p50, ms | p99, ms | max, ms |", "|---|---|---|---|---|"), rows);
    }

    /** Latencies in ms of each probe; -1 for one that got no answer within the timeout. */
    private static double[] measure(PodNetwork pod, WardenProcess warden) throws InterruptedException {
        double[] millis = new double[PROBES];
        for (int i = 0; i < PROBES; i++) {
            long start = System.nanoTime();
            int status = ConnectionFlood.probe(pod.podAddress(), warden.managementPort(), "/q/health/live", TIMEOUT_MS);
            millis[i] = status == 200 ? (System.nanoTime() - start) / 1e6 : -1;
            Thread.sleep(50);
        }
        return millis;
    }

    private static String row(String neighbour, double[] millis) {
        double[] answered = Arrays.stream(millis).filter(m -> m >= 0).sorted().toArray();
        if (answered.length == 0) {
            return "| " + neighbour + " | 0 of " + millis.length + " | | | |";
        }
        return String.format(Locale.ROOT, "| %s | %d of %d | %.2f | %.2f | %.2f |", neighbour, answered.length, millis.length,
                answered[answered.length / 2], answered[Math.min(answered.length - 1, (int) (answered.length * 0.99))],
                answered[answered.length - 1]);
    }
}
