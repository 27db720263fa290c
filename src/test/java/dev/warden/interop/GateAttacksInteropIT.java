package dev.warden.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.Await;
import dev.warden.testing.GatePod;
import dev.warden.testing.LilbeeServe;
import dev.warden.testing.OverlapWatch;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The three ways a hostile container of the pod split a data dir in gate mode before the dead-man switch, played with
 * real processes: two pods, each in PID and network namespaces of its own, warden on its default ports in each, the
 * real {@code lilbee serve} run by the shipped supervisor exactly as the chart runs it, the neighbour a process of the
 * pod ({@link GatePod#exec}). Sampled every 100 ms throughout: never two lilbees serving (listening: a lilbee binds its
 * port only once it holds server.lock); afterwards exactly one pod serves. The simulation plays the same attacks with
 * random timing (SimAdversary) and finds each with its fix undone (GateMutationSoak).
 */
class GateAttacksInteropIT {

    private static final Duration LILBEE = Duration.ofSeconds(90);

    @TempDir
    Path dir;

    private Map<String, String> env;
    private Path data;
    private final List<GatePod> pods = new CopyOnWriteArrayList<>();
    private OverlapWatch serving;

    @BeforeEach
    void aDataRoot() throws Exception {
        GatePod.assumeRoot();
        LilbeeServe.command("lilbee");
        dir = dir.toRealPath();
        data = dir.resolve("root/data");
        env = LilbeeServe.environment(Files.createDirectories(dir.resolve("home")), Map.of("LILBEE_DATA", dir.resolve("root").toString()));
        serving = OverlapWatch.of(() -> pods.stream().filter(GatePod::lilbeeListens).map(GatePod::name).toList());
    }

    private void twoPods(GatePod.Kubelet kubelet) throws Exception {
        pods.add(GatePod.gated("attacked", env, kubelet));
        pods.add(GatePod.gated("other", env, kubelet));
    }

    @AfterEach
    void stopPods() throws Exception {
        if (serving != null) {
            serving.close();
        }
        for (GatePod pod : pods) {
            pod.kill();
        }
    }

    private GatePod theOneServing() {
        return GatePod.theOneServing(pods, LILBEE);
    }

    private GatePod other(GatePod pod) {
        return GatePod.other(pods, pod);
    }

    private void neverTwo() {
        assertEquals(List.of(), serving.overlaps(), "two lilbees served at once\n" + logs());
        for (GatePod pod : pods) {
            assertTrue(!pod.lilbeeExits().contains(3), pod.name() + "'s lilbee exited 3\n" + logs());
        }
    }

    private String logs() {
        return pods.stream().map(GatePod::logs).collect(Collectors.joining("\n"));
    }

    /**
     * The serving pod's warden stopped (SIGSTOP by a process of warden's UID), server.lock renamed away by a writer of
     * the data dir, warden killed a second later and restarted by a kubelet a second after that. Before: the restarted
     * warden could not see its lilbee on the renamed file, the other pod was elected, found the path free and started a
     * second lilbee. Now: its supervisor holds the gate lock while that lilbee lives, and stops it once its permit runs
     * out, as no warden renews it: the other pod is elected only after it is gone (or the restarted warden takes the gate
     * back first).
     */
    @Test
    void serverLockRenamedWhileWardenIsBrieflyDown() throws Exception {
        twoPods(new GatePod.Kubelet(Duration.ofSeconds(1), Duration.ofSeconds(1)));
        GatePod attacked = theOneServing();
        GatePod other = other(attacked);
        ProcessHandle warden = attacked.warden().orElseThrow();
        ProcessHandle firstLilbee = attacked.lilbee().orElseThrow();
        signal(warden, "STOP");
        Files.move(data.resolve("server.lock"), data.resolve("server.lock.old"));
        Thread.sleep(1000);
        warden.destroyForcibly();
        Await.until("the attacked pod's first lilbee, on the renamed file, is gone", LILBEE, () -> {
            // Alive first: a start seen after a look that found it alive began while it served.
            boolean alive = firstLilbee.isAlive();
            if (alive && other.lilbeeStarts() > 0) {
                throw new AssertionError("the other pod's lilbee started beside the first\n" + logs());
            }
            return !alive;
        });
        theOneServing();
        neverTwo();
    }

    /**
     * The serving pod's warden stopped, the data dir emptied under it (what {@code lilbee reset} does, here at once so
     * that it lands while warden cannot see it), a process of the other pod holding an exclusive flock on a deleted file
     * it named server.lock, then the stopped warden killed (the kubelet's back-off keeps it down 10 s). Before: that decoy
     * counted as the other pod's lilbee on a replaced file, so its pod started at once instead of waiting the settle,
     * beside the first pod's lilbee still serving on the deleted lock until its liveness probe on the dead warden fired.
     * Now: only the lilbee the supervisor names counts, and none starts before the first pod's is gone.
     */
    @Test
    void aDecoyInTheStandbyPodAtTheSettle() throws Exception {
        twoPods(GatePod.Kubelet.KUBERNETES);
        GatePod attacked = theOneServing();
        GatePod other = other(attacked);
        ProcessHandle warden = attacked.warden().orElseThrow();
        ProcessHandle firstLilbee = attacked.lilbee().orElseThrow();
        signal(warden, "STOP");
        emptyTheDataDir();
        Path holds = dir.resolve("decoy-holds");
        Process decoy = other.exec("decoy", "python3", "-c", String.join("\n",
                "import fcntl, os, sys, time",
                "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o666)",
                "fcntl.flock(fd, fcntl.LOCK_EX)",
                "os.unlink(sys.argv[1])",
                "open(sys.argv[2], 'w').close()",
                "time.sleep(600)"), data.resolve("server.lock").toString(), holds.toString());
        try {
            Await.until("the decoy holds a deleted server.lock", LILBEE, () -> Files.exists(holds) || !decoy.isAlive());
            assertTrue(decoy.isAlive(), "the decoy took its lock");
            warden.destroyForcibly();
            // Until the attacked pod's lilbee, on the deleted lock, is gone, a second lilbee would serve beside it.
            Await.until("the attacked pod's lilbee is gone", LILBEE, () -> !firstLilbee.isAlive());
            theOneServing();
            neverTwo();
        } finally {
            decoy.destroyForcibly();
            decoy.waitFor();
        }
    }

    /**
     * The serving pod's warden stopped, the data dir emptied under it, then warden killed while a process of its pod binds
     * warden's ports (9095, 9096) the moment they are free, answering 200 to everything: warden cannot come back. Before:
     * the lilbee container's liveness probe (warden's liveness) and its command (warden's startup probe) asked those
     * ports and believed the squatter, so the first lilbee served on the deleted lock until something else stopped it,
     * while the other pod, past its settle, started its own on the path. Now the supervisor listens to warden's switch
     * socket alone: its permit runs out, its lilbee stops and is not started again, and the other pod serves.
     */
    @Test
    void aSquatterOnWardensPortWhileWardenIsDown() throws Exception {
        twoPods(GatePod.Kubelet.KUBERNETES);
        GatePod attacked = theOneServing();
        GatePod other = other(attacked);
        int starts = attacked.lilbeeStarts();
        String squatter = String.join("\n",
                "import http.server, socketserver, sys, threading, time",
                // As any squatter would: a port whose server side holds connections in TIME_WAIT (the probes') cannot
                // be bound for a minute without it.
                "socketserver.ThreadingTCPServer.allow_reuse_address = True",
                "class Yes(http.server.BaseHTTPRequestHandler):",
                "    def do_GET(self):",
                "        self.send_response(200); self.end_headers(); self.wfile.write(b'{\"status\":\"UP\"}')",
                "    def log_message(self, *a): pass",
                "servers = []",
                "while len(servers) < 2:",
                "    for port in (9095, 9096):",
                "        if port not in [s.server_address[1] for s in servers]:",
                "            try:",
                "                s = socketserver.ThreadingTCPServer(('0.0.0.0', port), Yes)",
                "                servers.append(s); threading.Thread(target=s.serve_forever, daemon=True).start()",
                "            except OSError: time.sleep(0.005)",
                "open(sys.argv[1], 'w').close()",
                "time.sleep(600)");
        ProcessHandle warden = attacked.warden().orElseThrow();
        Path bound = dir.resolve("squatter-bound");
        Process squat = attacked.exec("squatter", "python3", "-c", squatter, bound.toString());
        try {
            signal(warden, "STOP");
            emptyTheDataDir();
            warden.destroyForcibly();
            Await.until("the squatter holds warden's ports", LILBEE, () -> Files.exists(bound) || !squat.isAlive());
            assertTrue(squat.isAlive(), "the squatter bound warden's ports");
            Await.until("the other pod serves", LILBEE, () -> other.probe("ready") == 200 && other.lilbeeListens());
            neverTwo();
            assertEquals(starts, attacked.lilbeeStarts(), "the attacked pod's lilbee was never started again\n" + logs());
            assertTrue(attacked.lilbee().isEmpty(), "the attacked pod runs no lilbee\n" + logs());
        } finally {
            squat.destroyForcibly();
            squat.waitFor();
        }
    }

    private static void signal(ProcessHandle process, String signal) throws Exception {
        assertEquals(0, new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).start().waitFor());
    }

    /** What {@code lilbee reset} does to the locks: everything under the data dir deleted. */
    private void emptyTheDataDir() throws IOException {
        try (Stream<Path> tree = Files.walk(data)) {
            for (Path path : tree.filter(path -> !path.equals(data)).sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        }
    }
}
