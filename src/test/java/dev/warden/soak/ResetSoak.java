package dev.warden.soak;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.warden.testing.Await;
import dev.warden.testing.Supervised;
import dev.warden.testing.WardenProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code warden.soak.reset.rounds} (100) rounds of what split a data dir before: a {@code lilbee reset} (the gate file
 * and server.lock deleted) under the serving pod, its warden SIGKILLed 0-100 ms later and started again 0-300 ms after
 * that, and every third round the standby's warden restarted as well. Two pods, each a real {@code warden serve --mode
 * gate} and the real lilbee supervisor running a stand-in (Python taking server.lock as filelock does) on its switch
 * socket. Sampled in a tight loop: never two stand-ins holding a server.lock at once; after every round exactly one pod
 * serves. The timings are the product's shortened alike (a settle of 2 s, a pause margin of 200 ms), so that a round
 * takes seconds.
 */
class ResetSoak {

    private static final int ROUNDS = Integer.getInteger("warden.soak.reset.rounds", 100);
    private static final Supervised.Settings SUPERVISOR = new Supervised.Settings(Duration.ofMillis(600), Duration.ofMillis(300));
    // The pause margin shortened with the rest (1 s of a 10 s settle): these rounds freeze no node.
    private static final List<String> TIMINGS = SUPERVISOR.wardenSettings("-Dwarden.gate.settle=2s",
            "-Dwarden.gate.supervisor.stall-bound=500ms", "-Dwarden.gate.pause-margin=200ms");

    @TempDir
    Path dir;

    private Path root;
    private final List<Pod> pods = new ArrayList<>();

    /** One pod: its warden (replaced when killed) and its supervised lilbee, on a switch socket of the pod's own. */
    private final class Pod {
        final String name;
        final Path socket;
        final Supervised lilbee;
        WardenProcess warden;
        int restarts;

        Pod(String name) throws Exception {
            this.name = name;
            this.socket = dir.resolve("run-" + name).resolve("switch.sock");
            startWarden();
            lilbee = Supervised.standIn("reset-soak-" + name, socket, root.resolve("data/server.lock"), SUPERVISOR);
        }

        void startWarden() throws Exception {
            List<String> settings = new ArrayList<>(TIMINGS);
            settings.add("-Dwarden.gate.supervisor.socket=" + socket);
            warden = WardenProcess.serve("reset-soak-" + name + "-" + restarts++, settings, "--mode", "gate", "--data-root",
                    root.toString());
        }

        void restartWarden() throws Exception {
            warden.kill();
            startWarden();
        }

        boolean serving() {
            return warden.status("/q/health/ready") == 200;
        }

        void close() throws Exception {
            warden.close();
            lilbee.close();
        }
    }

    @AfterEach
    void stopPods() throws Exception {
        for (Pod pod : pods) {
            pod.close();
        }
    }

    @Test
    void resetsWithTheServingWardenKilledNeverLetTwoLilbeesServe() throws Exception {
        root = dir.resolve("root");
        Files.createDirectories(root.resolve("data"));
        pods.add(new Pod("a"));
        pods.add(new Pod("b"));
        AtomicBoolean sampling = new AtomicBoolean(true);
        AtomicReference<String> split = new AtomicReference<>();
        Thread sampler = Thread.ofPlatform().start(() -> {
            while (sampling.get() && split.get() == null) {
                List<Long> a = pods.get(0).lilbee.serving();
                List<Long> b = pods.get(1).lilbee.serving();
                if (a.size() + b.size() > 1) {
                    split.set("pod a runs lilbees " + a + " holding a server.lock, pod b " + b);
                }
                Thread.onSpinWait();
            }
        });
        Random random = new Random(21);
        try {
            for (int round = 0; round < ROUNDS && split.get() == null; round++) {
                Pod serving = awaitOneServing(round);
                Files.deleteIfExists(root.resolve("data/warden-gate.lock"));
                Files.deleteIfExists(root.resolve("data/server.lock"));
                Thread.sleep(random.nextInt(101));
                serving.warden.kill();
                Thread.sleep(random.nextInt(301));
                serving.startWarden();
                if (round % 3 == 2) {
                    (pods.get(0) == serving ? pods.get(1) : pods.get(0)).restartWarden();
                }
            }
            awaitOneServing(ROUNDS);
        } finally {
            sampling.set(false);
            sampler.join();
        }
        assertEquals(null, split.get(), "two lilbees held a server.lock at once");
    }

    private Pod awaitOneServing(int round) {
        Pod[] one = new Pod[1];
        Await.until("round " + round + ": exactly one pod serves, its lilbee the only one holding a lock", Duration.ofSeconds(60),
                () -> {
                    List<Pod> ready = pods.stream().filter(Pod::serving).toList();
                    one[0] = ready.size() == 1 ? ready.getFirst() : null;
                    return one[0] != null && one[0].lilbee.serving().size() == 1
                            && pods.stream().mapToInt(p -> p.lilbee.serving().size()).sum() == 1;
                });
        return one[0];
    }
}
