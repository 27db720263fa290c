package dev.warden.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.warden.testing.Await;
import dev.warden.testing.GatePod;
import dev.warden.testing.LilbeeServe;
import dev.warden.testing.OverlapWatch;
import dev.warden.testing.Supervised;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Gate mode against the real {@code lilbee serve} 0.6.90b449: pods on one data root, each in PID and network namespaces
 * of its own with a test kubelet as its PID 1 that runs them as the chart does (warden first, then lilbee's container:
 * the real supervisor running {@code lilbee serve}). At no sample do two lilbees serve, no lilbee ever exits 3, a killed
 * serving pod is replaced by another pod's lilbee, a lilbee crash keeps the gate in its pod, a warden restarted while
 * its lilbee serves neither lets a second lilbee start nor leaves its pod unready, and a real reset leaves one pod
 * serving, its warden killed or not.
 */
class GateInteropIT {

    /** lilbee's start (a few seconds) on a machine whose two cores start three JVMs and lilbees at once. */
    private static final Duration LILBEE = Duration.ofSeconds(90);
    /** The chart's readiness period: a serving pod must not stay unready for longer. */
    private static final Duration READINESS_PERIOD = Duration.ofSeconds(2);

    @TempDir
    Path dir;

    private Map<String, String> env;
    private final List<GatePod> pods = new CopyOnWriteArrayList<>();
    private OverlapWatch serving;

    @BeforeEach
    void dataRoot() throws Exception {
        GatePod.assumeRoot();
        LilbeeServe.command("lilbee");
        dir = dir.toRealPath();
        env = LilbeeServe.environment(Files.createDirectories(dir.resolve("home")),
                Map.of("LILBEE_DATA", dir.resolve("root").toString()));
        // A lilbee binds its port only once it holds server.lock.
        serving = OverlapWatch.of(() -> pods.stream().filter(GatePod::lilbeeListens).map(GatePod::name).toList());
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

    private GatePod pod(String name, GatePod.Kubelet kubelet) throws Exception {
        return pod(name, kubelet, Supervised.Settings.CHART);
    }

    private GatePod pod(String name, GatePod.Kubelet kubelet, Supervised.Settings supervisor, String... wardenSettings)
            throws Exception {
        // Each pod on the default ports of a network of its own, as on a node.
        GatePod pod = GatePod.gated(name, env, kubelet, supervisor, wardenSettings);
        pods.add(pod);
        return pod;
    }

    private GatePod awaitTheOneServing(List<GatePod> candidates) {
        GatePod[] serving = new GatePod[1];
        try {
            Await.until("one pod is ready", LILBEE, () -> {
                List<GatePod> ready = candidates.stream().filter(p -> p.probe("ready") == 200).toList();
                serving[0] = ready.size() == 1 ? ready.getFirst() : null;
                return serving[0] != null;
            });
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "\n" + logs(), e);
        }
        return serving[0];
    }

    /** Two pods with a quick kubelet (1 s back-off): the one serving, then the other once it stands by. */
    private List<GatePod> servingAndStandby(String first, String second) throws Exception {
        GatePod.Kubelet quick = new GatePod.Kubelet(Duration.ofSeconds(1), Duration.ofSeconds(1));
        List<GatePod> both = List.of(pod(first, quick), pod(second, quick));
        GatePod serving = awaitTheOneServing(both);
        GatePod standby = other(both, serving);
        Await.until("the standby stands by", () -> standby.status()
                .map(s -> s.at("/gate/state").asText()).filter("standby"::equals).isPresent());
        return List.of(serving, standby);
    }

    /** Of two pods, the one that is not {@code pod}. */
    private static GatePod other(List<GatePod> two, GatePod pod) {
        return two.get(0) == pod ? two.get(1) : two.get(0);
    }

    private String logs() {
        return pods.stream().map(GatePod::logs).collect(Collectors.joining("\n"));
    }

    /** No two lilbees served at any sample, and no lilbee exited 3 (refused by another's lock). */
    private void assertOneServerAndNoRefusal() {
        assertEquals(List.of(), serving.overlaps(), "two lilbees served at once\n" + logs());
        for (GatePod pod : pods) {
            assertFalse(pod.lilbeeExits().contains(3), pod.name() + "'s lilbee exited 3\n" + logs());
        }
    }

    @Test
    void threePodsServeExactlyOneLilbeeAndEachKilledServingPodIsReplacedWithoutARefusal() throws Exception {
        List<GatePod> alive = new ArrayList<>(List.of(pod("a", GatePod.Kubelet.KUBERNETES),
                pod("b", GatePod.Kubelet.KUBERNETES), pod("c", GatePod.Kubelet.KUBERNETES)));
        for (int round = 0; round < 2; round++) {
            GatePod serving = awaitTheOneServing(alive);
            for (GatePod standby : alive) {
                if (standby != serving) {
                    Await.until(standby.name() + " answers its startup probe", () -> standby.probe("started") != -1);
                    assertEquals(503, standby.probe("ready"));
                    assertEquals(200, standby.probe("live"), "a standby is alive");
                    assertEquals(0, standby.lilbeeStarts(), "a standby's lilbee never starts\n" + logs());
                }
            }
            JsonNode status = serving.status().orElseThrow();
            assertEquals("gate", status.path("mode").asText());
            assertEquals("elected", status.at("/gate/state").asText(), status.toString());
            assertEquals("held-in-pod", status.at("/gate/server_lock/state").asText(), status.toString());
            serving.kill();
            alive.remove(serving);
        }
        awaitTheOneServing(alive);
        assertOneServerAndNoRefusal();
    }

    @Test
    void aLilbeeCrashInTheElectedPodKeepsTheGateThere() throws Exception {
        GatePod.Kubelet quick = new GatePod.Kubelet(Duration.ofSeconds(1), Duration.ofSeconds(1));
        List<GatePod> both = List.of(pod("elected", quick), pod("standby", quick));
        GatePod serving = awaitTheOneServing(both);
        GatePod standby = other(both, serving);
        ProcessHandle lilbee = serving.lilbee().orElseThrow();
        lilbee.destroyForcibly();
        Await.until("the serving pod's lilbee is gone", () -> !lilbee.isAlive());
        Await.until("the serving pod's lilbee restarted and serves", LILBEE,
                () -> serving.lilbeeStarts() == 2 && serving.probe("ready") == 200);
        assertEquals(1, serving.events("lilbee", "start").size(), "started again by its supervisor, no container restart");
        assertEquals(0, standby.lilbeeStarts(), "the standby's lilbee never started\n" + logs());
        assertOneServerAndNoRefusal();
    }

    /**
     * A warm standby: the standby's supervisor has prepared the real lilbee (its modules loaded in a process of its
     * own) that holds no lock, no file of the data root and no listening socket; the serving pod killed, lilbee runs in
     * that very process, with no start of its own, and once it listens the next standby waits warm again.
     */
    @Test
    void aStandbysPreparedLilbeeHoldsNothingAndServesInThatProcessOnTheFailover() throws Exception {
        List<GatePod> both = servingAndStandby("serving", "warm");
        GatePod serving = both.get(0);
        GatePod standby = both.get(1);
        Await.until("the standby's lilbee is prepared", LILBEE, () -> standby.prepared().isPresent()
                && standby.status().map(s -> s.at("/gate/warm_pid").isNumber()).orElse(false));
        ProcessHandle prepared = standby.prepared().orElseThrow();
        assertEquals(List.of(), descriptorsIn(prepared.pid(), dir.resolve("root")), "a prepared lilbee opens no file of the data root");
        assertEquals(List.of(), lockLines(prepared.pid()), "a prepared lilbee holds no lock");
        assertFalse(listens(prepared.pid()), "a prepared lilbee serves nothing");
        assertEquals(0, standby.lilbeeStarts());
        serving.kill();
        Await.until("the standby serves", LILBEE, () -> standby.probe("ready") == 200);
        assertEquals(prepared.pid(), standby.lilbee().orElseThrow().pid(), "lilbee runs in the prepared process\n" + logs());
        assertTrue(prepared.isAlive());
        assertEquals(1, standby.warmStarts(), "started in its prepared process, no cold start\n" + logs());
        assertOneServerAndNoRefusal();
    }

    /** The descriptors of process {@code pid} open on files under {@code root}. */
    private static List<String> descriptorsIn(long pid, Path root) throws IOException {
        List<String> open = new ArrayList<>();
        try (var fds = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
            for (Path fd : fds.toList()) {
                try {
                    Path target = Files.readSymbolicLink(fd);
                    if (target.startsWith(root)) {
                        open.add(fd.getFileName() + " -> " + target);
                    }
                } catch (IOException e) {
                    // closed meanwhile
                }
            }
        }
        return open;
    }

    /** The {@code lock:} lines of every descriptor of process {@code pid}: none when it holds no lock. */
    private static List<String> lockLines(long pid) throws IOException {
        List<String> locks = new ArrayList<>();
        try (var infos = Files.list(Path.of("/proc", Long.toString(pid), "fdinfo"))) {
            for (Path info : infos.toList()) {
                try {
                    Files.readAllLines(info).stream().filter(line -> line.startsWith("lock:")).forEach(locks::add);
                } catch (IOException e) {
                    // closed meanwhile
                }
            }
        }
        return locks;
    }

    /** Whether process {@code pid} has a listening TCP socket: its socket inodes against its network's listeners. */
    private static boolean listens(long pid) throws IOException {
        java.util.Set<String> inodes = new java.util.HashSet<>();
        try (var fds = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
            for (Path fd : fds.toList()) {
                try {
                    String target = Files.readSymbolicLink(fd).toString();
                    if (target.startsWith("socket:[")) {
                        inodes.add(target.substring(8, target.length() - 1));
                    }
                } catch (IOException e) {
                    // closed meanwhile
                }
            }
        }
        for (String table : List.of("tcp", "tcp6")) {
            for (String row : Files.readAllLines(Path.of("/proc", Long.toString(pid), "net", table)).stream().skip(1).toList()) {
                String[] fields = row.trim().split("\\s+");
                if (fields[3].equals("0A") && inodes.contains(fields[9])) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * The real {@code lilbee reset} clears the data dir while the elected pod's lilbee serves, the gate file and
     * server.lock included: its warden, no longer on the gate file at the path, stops that lilbee (it holds the deleted
     * gate file's lock and server.lock), the standby, waiting in the kernel on the old gate file, stays out until that
     * lilbee is gone, and one pod (after the settle a new gate file asks) serves from the new server.lock.
     */
    @Test
    void aRealLilbeeResetLeavesOnePodServingOnTheNewFiles() throws Exception {
        List<GatePod> both = servingAndStandby("serving", "waiting");
        GatePod serving = both.get(0);
        Path gateLock = dir.resolve("root/data/warden-gate.lock");
        long before = (Long) Files.getAttribute(gateLock, "unix:ino");
        long oldLilbee = serving.lilbee().orElseThrow().pid();
        dev.warden.testing.WardenProcess.Result reset = LilbeeServe.run(dir, env, "reset", "--yes");
        assertEquals(0, reset.exitCode(), reset.stdout());
        Await.until("the lilbee on the deleted files was stopped", () -> ProcessHandle.of(oldLilbee).map(p -> !p.isAlive())
                .orElse(true));
        GatePod now = awaitTheOneServing(both);
        Await.until("a lilbee serves on the new files", LILBEE, () -> now.lilbee().filter(l -> l.pid() != oldLilbee).isPresent()
                && now.probe("ready") == 200);
        assertTrue((Long) Files.getAttribute(gateLock, "unix:ino") != before, "a new gate file");
        assertOneServerAndNoRefusal();
    }

    /**
     * A real {@code lilbee reset} under the serving pod, then its warden SIGKILLed while it heals: at every
     * sample at most one lilbee serves, and afterwards exactly one pod serves.
     */
    @Test
    void aRealResetThenTheServingWardenKilledLeavesExactlyOneLilbee() throws Exception {
        List<GatePod> both = servingAndStandby("first", "second");
        GatePod serving = both.get(0);
        dev.warden.testing.WardenProcess.Result reset = LilbeeServe.run(dir, env, "reset", "--yes");
        assertEquals(0, reset.exitCode(), reset.stdout());
        ProcessHandle warden = serving.warden().orElseThrow();
        warden.destroyForcibly();
        Await.until("the serving pod's warden is gone", () -> !warden.isAlive());
        awaitTheOneServing(both);
        Await.until("a lilbee serves again", LILBEE, () -> both.stream().filter(GatePod::lilbeeListens).count() == 1);
        assertOneServerAndNoRefusal();
    }

    /**
     * The serving pod's warden dies while its lilbee serves: that lilbee holds the gate lock, so the standby is not
     * elected; the restarted warden takes the lock back from its pod's supervisor and is ready at once, the same
     * lilbee serving throughout. Neither two servers, nor a serving pod left unready for longer than a readiness period.
     */
    @Test
    void aWardenRestartedWhileItsLilbeeServesLetsNoSecondLilbeeStartAndIsReadyAtOnce() throws Exception {
        GatePod.Kubelet quick = new GatePod.Kubelet(Duration.ofSeconds(1), Duration.ofSeconds(1));
        // The permit must outlast the kubelet's back-off and the JVM's start, or the supervisor rightly stops lilbee
        // before the restarted warden renews it: on CI's two busy cores that start took 3.1 s, and 1 s + 3.1 s + the
        // handover missed the chart's 5 s permit by 20 ms. A longer permit asks a longer settle (its inequality).
        Supervised.Settings outlasting = new Supervised.Settings(Duration.ofSeconds(8), Duration.ofSeconds(2));
        List<GatePod> both = List.of(pod("first", quick, outlasting, "-Dwarden.gate.settle=13s"),
                pod("second", quick, outlasting, "-Dwarden.gate.settle=13s"));
        GatePod serving = awaitTheOneServing(both);
        GatePod standby = other(both, serving);
        Await.until("the standby stands by", () -> standby.gateState().filter("standby"::equals).isPresent());
        ProcessHandle warden = serving.warden().orElseThrow();
        long lilbeePid = serving.lilbee().orElseThrow().pid();
        warden.destroyForcibly();
        Await.until("the serving pod's warden is gone", () -> !warden.isAlive());
        Await.until("the serving pod's warden restarted and answers", LILBEE,
                () -> serving.warden().filter(w -> w.pid() != warden.pid()).isPresent() && serving.probe("started") != -1);
        long answering = System.nanoTime();
        Await.until("the restarted warden is ready", () -> serving.probe("ready") == 200);
        Duration unready = Duration.ofNanos(System.nanoTime() - answering);
        assertTrue(unready.compareTo(READINESS_PERIOD) < 0,
                "the serving pod was unready for " + unready.toMillis() + " ms after its warden answered\n" + logs());
        assertEquals(lilbeePid, serving.lilbee().orElseThrow().pid(), "the serving lilbee was never disturbed");
        assertEquals("elected", serving.gateState().orElseThrow());
        assertEquals("standby", standby.gateState().orElseThrow(), "the gate never left the serving pod");
        assertEquals(0, standby.lilbeeStarts(), "the standby's lilbee never started\n" + logs());
        assertOneServerAndNoRefusal();
        assertFalse(serving.events("warden", "exit").isEmpty(), "the kubelet saw the warden die");
    }
}
