package dev.warden.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.Await;
import dev.warden.testing.GatePod;
import dev.warden.testing.LilbeeServe;
import dev.warden.testing.OverlapWatch;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
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
 * random timing (SimAdversary) and finds each with its fix undone (GateMutationTest).
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
    void twoPods() throws Exception {
        GatePod.assumeRoot();
        LilbeeServe.command("lilbee");
        dir = dir.toRealPath();
        data = dir.resolve("root/data");
        env = LilbeeServe.environment(Files.createDirectories(dir.resolve("home")), Map.of("LILBEE_DATA", dir.resolve("root").toString()));
        serving = OverlapWatch.of(() -> pods.stream().filter(GatePod::lilbeeListens).map(GatePod::name).toList());
        // A kubelet that restarts a killed warden a second later: down too briefly for anything but the switch to act.
        GatePod.Kubelet kubelet = new GatePod.Kubelet(Duration.ofSeconds(1), Duration.ofSeconds(1));
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
        GatePod[] one = new GatePod[1];
        Await.until("exactly one pod serves", LILBEE, () -> {
            List<GatePod> ready = pods.stream().filter(p -> p.probe("ready") == 200 && p.lilbeeListens()).toList();
            one[0] = ready.size() == 1 ? ready.getFirst() : null;
            return one[0] != null;
        });
        return one[0];
    }

    private GatePod other(GatePod pod) {
        return pods.get(0) == pod ? pods.get(1) : pods.get(0);
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
     * the data dir, warden killed a second later (the kubelet restarts it). Before: the restarted warden could not see
     * its lilbee on the renamed file, the other pod was elected, found the path free and started a second lilbee.
     * Now: its supervisor holds the gate lock while that lilbee lives, and stops it once its permit runs out, as no warden
     * renews it: the other pod is elected only after it is gone (or the restarted warden takes the gate back first).
     */
    @Test
    void serverLockRenamedWhileWardenIsBrieflyDown() throws Exception {
        GatePod attacked = theOneServing();
        GatePod other = other(attacked);
        ProcessHandle warden = attacked.warden().orElseThrow();
        ProcessHandle firstLilbee = attacked.lilbee().orElseThrow();
        assertEquals(0, new ProcessBuilder("kill", "-STOP", Long.toString(warden.pid())).start().waitFor());
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
     * A real reset under the serving pod and its warden killed at once, while a process of the other pod holds an
     * exclusive flock on a deleted file it named server.lock. Before: that decoy counted as the other pod's lilbee on a
     * replaced file, and its pod started at once, beside the first pod's lilbee still serving on the deleted lock. Now:
     * only the lilbee the supervisor names counts, and none starts before the first pod's is gone.
     */
    @Test
    void aDecoyInTheStandbyPodAtTheSettle() throws Exception {
        GatePod attacked = theOneServing();
        GatePod other = other(attacked);
        ProcessHandle firstLilbee = attacked.lilbee().orElseThrow();
        dev.warden.testing.WardenProcess.Result reset = LilbeeServe.run(dir, env, "reset", "--yes");
        assertEquals(0, reset.exitCode(), reset.stdout());
        Process decoy = other.exec("decoy", "python3", "-c", String.join("\n",
                "import fcntl, os, sys, time",
                "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o666)",
                "fcntl.flock(fd, fcntl.LOCK_EX)",
                "os.unlink(sys.argv[1])",
                "print('holding a deleted server.lock', flush=True)",
                "time.sleep(600)"), data.resolve("server.lock").toString());
        try {
            attacked.warden().orElseThrow().destroyForcibly();
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
     * A process of the serving pod binds warden's ports (9095, 9096) while warden is down, answering 200 to everything:
     * warden cannot come back, and before, the lilbee container's command, which asked warden's port whether lilbee may
     * start, believed it. Now the supervisor listens to warden's switch socket alone: its permit runs out, its lilbee
     * stops, and the other pod serves.
     */
    @Test
    void aSquatterOnWardensPortWhileWardenIsDown() throws Exception {
        GatePod attacked = theOneServing();
        GatePod other = other(attacked);
        int starts = attacked.lilbeeStarts();
        String squatter = String.join("\n",
                "import http.server, socketserver, threading, time",
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
                "print('bound', flush=True)",
                "time.sleep(600)");
        Process squat = attacked.exec("squatter", "python3", "-c", squatter);
        try {
            dev.warden.testing.WardenProcess.Result reset = LilbeeServe.run(dir, env, "reset", "--yes");
            assertEquals(0, reset.exitCode(), reset.stdout());
            attacked.warden().orElseThrow().destroyForcibly();
            Await.until("the other pod serves", LILBEE, () -> other.probe("ready") == 200 && other.lilbeeListens());
            assertEquals(starts, attacked.lilbeeStarts(), "the attacked pod's lilbee was never started again\n" + logs());
            assertTrue(attacked.lilbee().isEmpty(), "the attacked pod runs no lilbee\n" + logs());
            neverTwo();
        } finally {
            squat.destroyForcibly();
            squat.waitFor();
        }
    }
}
