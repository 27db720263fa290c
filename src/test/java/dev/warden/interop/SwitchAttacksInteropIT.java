package dev.warden.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * issue 48's four attacks on gate mode's switch, each played by a real process of lilbee's container
 * (src/test/resources/gate/neighbour.py, in the supervisor's PID, mount and network namespaces: warden's UID, lilbee's
 * mounts) in two pods of the pod emulation (each container in a mount namespace of its own, the chart's supervisor
 * command, the real {@code lilbee serve}). Sampled every 100 ms throughout: never two lilbees serving (listening: a
 * lilbee binds its port only once it holds server.lock); afterwards exactly one pod serves. The simulation plays the same
 * attacks with random timing (SimNeighbour, SimAdversary) and finds each with its fix undone (GateMutationSoak).
 */
class SwitchAttacksInteropIT {

    private static final Duration LILBEE = Duration.ofSeconds(90);
    private static final Path NEIGHBOUR = Path.of("src/test/resources/gate/neighbour.py").toAbsolutePath();

    @TempDir
    Path dir;

    private Map<String, String> env;
    private Path data;
    private final List<GatePod> pods = new CopyOnWriteArrayList<>();
    private final List<Process> neighbours = new ArrayList<>();
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

    @AfterEach
    void stopEverything() throws Exception {
        for (Process neighbour : neighbours) {
            neighbour.destroyForcibly();
            neighbour.waitFor();
        }
        if (serving != null) {
            serving.close();
        }
        for (GatePod pod : pods) {
            pod.kill();
        }
    }

    private void twoPods(GatePod.Kubelet kubelet) throws Exception {
        pods.add(GatePod.gated("attacked", env, kubelet));
        pods.add(GatePod.gated("other", env, kubelet));
    }

    private GatePod theOneServing() {
        return GatePod.theOneServing(pods, LILBEE);
    }

    private GatePod other(GatePod pod) {
        return GatePod.other(pods, pod);
    }

    /** The neighbour in {@code pod}'s lilbee container, in {@code mode}: its report file. */
    private Path neighbour(GatePod pod, String mode, String... args) throws IOException {
        Path report = dir.resolve(pod.name() + "-" + mode + "-report");
        List<String> command = new ArrayList<>(List.of(Supervised.python(), NEIGHBOUR.toString(), mode));
        for (String arg : args) {
            command.add(arg.equals("REPORT") ? report.toString() : arg);
        }
        neighbours.add(pod.execInLilbee(mode, command.toArray(String[]::new)));
        return report;
    }

    private void neverTwo() {
        assertEquals(List.of(), serving.overlaps(), "two lilbees served at once\n" + logs());
    }

    private String logs() {
        return pods.stream().map(GatePod::logs).collect(Collectors.joining("\n"));
    }

    private static String read(Path report) {
        return GatePod.read(report);
    }

    /**
     * Attack 1: a socket of the neighbour's renamed over the switch's path, connections to warden's greeted to push the
     * supervisor off it, warden SIGKILLed (a process of its UID can) so that the supervisor reconnects; every
     * supervisor that connects told go, a gate lock given unlocked, and server.lock renamed away then. Before: warden let
     * the supervisor go for the neighbour's connections, the supervisor believed the fake and gave it the gate lock, the
     * other pod was elected and served beside the first. Now the switch keeps its one supervisor, the supervisor believes
     * no process of its own container and gives the gate lock to nobody, and warden puts its socket back; with the chart's
     * read-only mount the neighbour cannot bind there at all, and the design holds where a runtime ignores that mount.
     */
    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void aFakeWardenAtTheSwitchPath(boolean readOnlyMounts) throws Exception {
        twoPods(readOnlyMounts ? GatePod.Kubelet.KUBERNETES : GatePod.Kubelet.KUBERNETES.ignoringReadOnlyMounts());
        GatePod attacked = theOneServing();
        Path report = neighbour(attacked, "fake-warden", attacked.switchSocket().toString(), data.toString(), "REPORT", "30");
        Await.until("the fake in place, or refused", LILBEE, () -> read(report).contains("switch path")
                || read(report).contains("cannot bind"));
        attacked.warden().orElseThrow().destroyForcibly();
        Await.until("the fake warden's time is up", Duration.ofSeconds(60), () -> !neighbours.getLast().isAlive());
        theOneServing();
        neverTwo();
        String said = read(report);
        assertFalse(said.contains("unlocked a descriptor"), "no gate lock was given to it\n" + said);
        assertFalse(said.contains("said hello to it"), "no supervisor believed it enough to say hello\n" + said);
        assertTrue(said.contains(readOnlyMounts ? "cannot bind" : "renamed its socket over the switch path"), said);
    }

    /**
     * Attack 2: a neighbour connecting as a supervisor would, reporting that no lilbee runs, again and again. Before:
     * believed (the newest report won), the real lilbee was stopped, and the next start's gate lock went to the
     * neighbour too, which unlocked it. Now the switch refuses every connection beside its supervisor: the pod serves on,
     * its lilbee never stopped.
     */
    @Test
    void aForgedReport() throws Exception {
        twoPods(GatePod.Kubelet.KUBERNETES);
        GatePod attacked = theOneServing();
        int starts = attacked.lilbeeStarts();
        Path report = neighbour(attacked, "forge", attacked.switchSocket().toString(), data.toString(), "REPORT", "20");
        Await.until("the forger's time is up", Duration.ofSeconds(45), () -> !neighbours.getLast().isAlive());
        neverTwo();
        assertEquals(attacked, theOneServing(), "the attacked pod serves on\n" + logs());
        assertEquals(starts, attacked.lilbeeStarts(), "its lilbee was never stopped\n" + logs());
        String said = read(report);
        assertFalse(said.contains("unlocked a descriptor"), "no gate lock was given to it\n" + said);
        assertFalse(said.contains("heard:"), "warden said nothing to it\n" + said);
    }

    /**
     * Attack 3: the standby's supervisor killed, and while it restarts a neighbour binds its health port on IPv6 alone
     * (the kubelet probes over IPv6 here, as in a single-stack IPv6 cluster); then the serving pod's lilbee container
     * killed (the standby is elected), the standby's supervisor stalled once its lilbee serves, and the data dir reset.
     * Before: the supervisor fell back to IPv4 without a word, the squatter answered the kubelet's probes, the stalled
     * supervisor was never restarted, and its lilbee served beside the other pod's, on the new files, for 20 s and more.
     * Now the supervisor exits when a family of its port is taken (the kubelet restarts it, after its back-off), its pod
     * cannot serve, and the first pod serves again.
     */
    @Test
    void anIpv6SquatterOnTheSupervisorsHealthPort() throws Exception {
        twoPods(GatePod.Kubelet.KUBERNETES.probingOverIpv6());
        GatePod first = theOneServing();
        GatePod second = other(first);
        Path report = neighbour(second, "squat-v6", Integer.toString(GatePod.SUPERVISOR_PORT), "REPORT", "150");
        long killed = second.supervisor().orElseThrow().pid();
        second.supervisor().orElseThrow().destroyForcibly();
        Await.until("the squatter holds the port", LILBEE, () -> read(report).contains("holds"));
        Await.until("the second pod's supervisor refusing to run, or prepared", LILBEE, () -> second.logs().contains("is taken on"
                + " IPv6") || second.supervisor().filter(p -> p.pid() != killed).isPresent() && second.prepared().isPresent());
        boolean refused = second.logs().contains("is taken on IPv6");
        first.supervisor().orElseThrow().destroyForcibly();
        if (!refused) {
            // What the squatter is for: once the second pod serves, a supervisor that no longer turns, its probes answered.
            Await.until("the second pod serves", LILBEE, second::lilbeeListens);
            assertEquals(0, new ProcessBuilder("kill", "-STOP", Long.toString(second.supervisor().orElseThrow().pid())).start()
                    .waitFor());
        }
        emptyTheDataDir();
        // A stalled supervisor's container is restarted within the stall bound, and its lilbee with it.
        Await.until("the second pod runs no lilbee", LILBEE, () -> second.lilbee().isEmpty());
        Await.until("the first pod serves again", LILBEE, () -> first.probe("ready") == 200 && first.lilbeeListens());
        neverTwo();
        assertTrue(refused, "the second pod's supervisor said why it would not run\n" + logs());
    }

    /**
     * Attack 4: a neighbour in each pod asking warden to step down every 3 s, for 40 s. Before: any connection's
     * step-down was taken, and no pod was Ready in 47% of samples. Now only the supervisor's is, once (it says it when it
     * terminates): a pod is Ready in at least 90% of samples (every 100 ms).
     */
    @Test
    void stepDownFlappingFromLilbeesContainer() throws Exception {
        twoPods(GatePod.Kubelet.KUBERNETES);
        theOneServing();
        for (GatePod pod : pods) {
            neighbour(pod, "step-down", pod.switchSocket().toString(), "REPORT", "40", "3");
        }
        int samples = 0;
        int ready = 0;
        long end = System.nanoTime() + Duration.ofSeconds(40).toNanos();
        while (System.nanoTime() < end) {
            samples++;
            if (pods.stream().anyMatch(p -> p.probe("ready") == 200)) {
                ready++;
            }
            Thread.sleep(100);
        }
        neverTwo();
        assertTrue(ready >= 0.9 * samples, "a pod Ready in " + ready + " of " + samples + " samples\n" + logs());
    }

    /** What {@code lilbee reset} does to the locks: everything under the data dir deleted. */
    private void emptyTheDataDir() throws IOException {
        try (Stream<Path> tree = Files.walk(data)) {
            for (Path path : tree.filter(path -> !path.equals(data)).sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        }
    }
}
