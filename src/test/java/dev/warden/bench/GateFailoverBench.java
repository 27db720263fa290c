package dev.warden.bench;

import static dev.warden.bench.TakeoverBench.row;
import static dev.warden.bench.TakeoverBench.stats;

import dev.warden.testing.Await;
import dev.warden.testing.GatePod;
import dev.warden.testing.LilbeeServe;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Figure 7: a highly available {@code lilbee serve}. Two pods on one data root, each in a PID
 * namespace of its own with a test kubelet as PID 1 (Kubernetes' 10 s back-off doubling to 5
 * minutes, the startup probe asked once a second); the serving pod is SIGKILLed and the time until
 * the other pod serves is taken, then a fresh pod replaces the dead one, as a Deployment would.
 * With warden in gate mode the standby's lilbee starts once its warden is elected; without warden
 * both lilbees run and the standby's exits 3 every 15 s and backs off.
 */
class GateFailoverBench {

    /** The bare standby is killed into at a uniformly random moment of its first this-many seconds. */
    private static final int BARE_WINDOW_SECONDS = 30;
    private static final Duration PATIENCE = Duration.ofMinutes(6);
    /** warden's default warden.gate.settle, which GatePod keeps: a standby younger than it waits out the rest. */
    private static final Duration SETTLE = Duration.ofSeconds(10);

    /** When the serving pod is killed: as soon as the standby stands by, or once it has stood by past its settle. */
    private enum Standby { FRESH, SETTLED }

    @TempDir
    Path dir;

    private final List<GatePod> pods = new ArrayList<>();

    @AfterEach
    void stopPods() throws Exception {
        for (GatePod pod : pods) {
            pod.kill();
        }
    }

    @Test
    void failoverWithWardenInGateModeAndWithout() throws Exception {
        GatePod.assumeRoot();
        LilbeeServe.command("lilbee");
        int rounds = Integer.getInteger("warden.bench.gate-rounds", 20);
        Measured gated = rounds("gated", rounds, Standby.FRESH, true);
        Measured settled = rounds("settled", rounds, Standby.SETTLED, true);
        Measured bare = rounds("bare", rounds, Standby.FRESH, false);
        double startMs = bare.firstStartMicros / 1000.0;
        Report.section("7. lilbee failover",
                "Two pods of the real `lilbee serve` 0.6.90b449 on one data root, each in a PID namespace of its own"
                        + " (`unshare --pid --fork --mount-proc`) under a test kubelet (src/test/resources/gate/pod_kubelet.py:"
                        + " back-off 10 s doubling to 5 min, the chart's liveness probes). The serving pod is SIGKILLed whole;"
                        + " time from just before the kill until the other pod serves, then a fresh pod replaces the dead"
                        + " one. Gated: warden `serve --mode gate` as the sidecar and lilbee under the chart's supervisor, which"
                        + " starts it on warden's word over the switch socket; ready = warden's /q/health/ready 200"
                        + " (server.lock held in the pod and lilbee answering /api/health), polled every 5 ms; the kill lands"
                        + " as soon as the standby's warden stands by, inside its first settle (a warden younger than"
                        + " warden.gate.settle, 10 s, waits out the rest: it cannot know that the gate file was not replaced"
                        + " just before it started), or once it has stood by past it. Bare: lilbee"
                        + " alone, ready = lilbee accepting a connection on its port (a tcpSocket probe), polled every 5 ms;"
                        + " the kill lands at a uniformly random moment of the standby's first " + BARE_WINDOW_SECONDS
                        + " s (seeded), while its back-off is still 10 s: later in a pod's life the back-off grows to 5"
                        + " minutes and bare failovers only get slower (the computed row).",
                List.of("| failover | median ms | p99 ms | min ms | max ms | rounds | lilbee exits 3 |",
                        "|---|---|---|---|---|---|---|"),
                List.of(row("gated by warden, the standby killed into as soon as it stands by (within its first "
                                + SETTLE.toSeconds() + " s settle): kill to the standby pod's readiness 200", stats(gated.micros),
                                Integer.toString(gated.refusals)),
                        row("gated by warden, the standby past its settle: kill to the standby pod's readiness 200",
                                stats(settled.micros), Integer.toString(settled.refusals)),
                        row("bare replicas: kill to the standby's lilbee accepting connections", stats(bare.micros),
                                Integer.toString(bare.refusals)),
                        String.format(Locale.ROOT, "| bare, computed for a standby past its 5th exit 3 (back-off 300 s,"
                                + " its first start here %.1f s, a 15 s wait): mean over a random kill moment | %.0f (mean) |"
                                + " | | | | one per 5 min |", startMs / 1000, steadyStateMeanMs(startMs))));
    }

    /**
     * A bare standby past five exits cycles through a start, a 15 s wait for the lock, exit 3 and a 300 s
     * back-off. A kill during the start or the wait is served within one start (counted as a whole one);
     * during the back-off, after the rest of it and a whole start. The mean over a uniformly random kill
     * moment: computed from the kubelet's schedule, not measured (a round would take minutes).
     */
    private static double steadyStateMeanMs(double startMs) {
        double running = startMs + 15_000;
        double backoff = 300_000;
        return (running * startMs + backoff * (backoff / 2 + startMs)) / (running + backoff);
    }

    private Measured rounds(String name, int rounds, Standby when, boolean gated) throws Exception {
        Path trial = Files.createDirectories(dir.resolve(name));
        Map<String, String> env = LilbeeServe.environment(Files.createDirectories(trial.resolve("home")),
                Map.of("LILBEE_DATA", trial.resolve("root").toString()));
        Predicate<GatePod> serves = gated ? p -> p.probe("ready") == 200 : GatePod::lilbeeListens;
        Random random = new Random(7);
        long[] micros = new long[rounds];
        int refusals = 0;
        long first = System.nanoTime();
        GatePod serving = start(name + "-0", env, gated);
        Await.until("the first pod serves", PATIENCE, () -> serves.test(serving));
        long firstStartMicros = (System.nanoTime() - first) / 1000;
        GatePod current = serving;
        for (int i = 0; i < rounds; i++) {
            GatePod standby = start(name + "-" + (i + 1), env, gated);
            long standbyStarted = System.nanoTime();
            if (gated) {
                Await.until("the standby's warden stands by", PATIENCE, () -> standby.status()
                        .map(s -> s.at("/gate/state").asText()).filter("standby"::equals).isPresent());
                if (when == Standby.SETTLED) {
                    // Its warden started before it stood by: past the settle from its start, as a standby that has
                    // waited a while is.
                    Thread.sleep(SETTLE.toMillis());
                }
            } else {
                long killAt = standbyStarted + random.nextLong(BARE_WINDOW_SECONDS * 1_000_000_000L);
                while (System.nanoTime() < killAt) {
                    Thread.sleep(1);
                }
            }
            long killed = System.nanoTime();
            current.kill();
            while (!serves.test(standby)) {
                if (System.nanoTime() - killed > PATIENCE.toNanos()) {
                    throw new AssertionError("no failover in " + PATIENCE.toMinutes() + " minutes\n" + standby.logs());
                }
                Thread.sleep(5);
            }
            micros[i] = (System.nanoTime() - killed) / 1000;
            refusals += (int) current.events("lilbee", "exit").stream().filter(e -> e.path("rc").asInt() == 3).count();
            pods.remove(current);
            current = standby;
        }
        refusals += (int) current.events("lilbee", "exit").stream().filter(e -> e.path("rc").asInt() == 3).count();
        return new Measured(micros, firstStartMicros, refusals);
    }

    private GatePod start(String name, Map<String, String> env, boolean gated) throws Exception {
        GatePod pod = gated ? GatePod.gated(name, env, GatePod.Kubelet.KUBERNETES)
                : GatePod.bare(name, env, GatePod.Kubelet.KUBERNETES);
        pods.add(pod);
        return pod;
    }

    /** Each round's failover, the first pod's start to serving (on a free lock), and how many lilbees exited 3. */
    private record Measured(long[] micros, long firstStartMicros, int refusals) {
    }
}
