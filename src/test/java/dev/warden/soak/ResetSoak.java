package dev.warden.soak;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.config.LilbeePaths;
import dev.warden.engine.ProcessTable;
import dev.warden.engine.Signaller;
import dev.warden.gate.GateKeeper;
import dev.warden.gate.GateSnapshot;
import dev.warden.hold.HoldSnapshot;
import dev.warden.gate.LilbeeFence;
import dev.warden.gate.ServerLockHolders;
import dev.warden.lock.FileLocker;
import dev.warden.lock.NativePosix;
import dev.warden.lock.ProcLocks;
import dev.warden.testing.Await;
import dev.warden.testing.Peer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code warden.soak.reset.rounds} (100) rounds of what split a data dir before: a {@code lilbee reset}
 * (the gate file and server.lock deleted) under the serving pod, its warden killed 0-100 ms later and
 * restarted 0-300 ms after that, and every third round the standby's warden restarted as well. Two pods,
 * each a gate keeper whose view of {@code /proc} holds only its own processes (a PID namespace's view)
 * and a kubelet that runs a lilbee stand-in (Python holding filelock's exclusive flock on server.lock)
 * whenever its warden says started. Sampled in a tight loop: never two stand-ins holding a server.lock
 * at once, and after every round exactly one pod serves.
 */
class ResetSoak {

    private static final int ROUNDS = Integer.getInteger("warden.soak.reset.rounds", 100);
    private static final Duration GRACE = Duration.ofMillis(500);

    @TempDir
    Path dir;

    private LilbeePaths paths;
    private final ProcessTable processes = new ProcessTable();
    private final List<Pod> pods = new ArrayList<>();

    /** One pod: its view of /proc, its warden (replaced when killed) and its kubelet's lilbee. */
    private final class Pod {
        final String name;
        final Path proc;
        final AtomicReference<GateKeeper> warden = new AtomicReference<>();
        final AtomicReference<Peer> lilbee = new AtomicReference<>();
        final List<Peer> lilbees = new CopyOnWriteArrayList<>();
        final AtomicBoolean running = new AtomicBoolean(true);
        final Thread kubelet;

        Pod(String name) throws Exception {
            this.name = name;
            this.proc = Files.createDirectories(dir.resolve("proc-" + name));
            startWarden();
            kubelet = Thread.ofPlatform().name("kubelet-" + name).start(this::kubelet);
        }

        void startWarden() {
            NativePosix posix = new NativePosix();
            GateKeeper keeper = new GateKeeper(new FileLocker(posix), new ServerLockHolders(processes, proc),
                    new ProcLocks(), new LilbeeFence(new Signaller(posix, processes), GRACE, GRACE),
                    InstantSource.system(), new GateKeeper.Timings(Duration.ofMillis(50), Duration.ofMillis(100), GRACE.plus(GRACE),
                    Duration.ofMinutes(1)));
            keeper.start(paths);
            warden.set(keeper);
        }

        void killWarden() {
            warden.get().stop();
        }

        /** Starts lilbee whenever its warden says started and none runs; a lilbee is visible in this pod only. */
        private void kubelet() {
            while (running.get()) {
                try {
                    Peer current = lilbee.get();
                    GateSnapshot said = warden.get().snapshot();
                    if ((current == null || !current.process().isAlive()) && said.phase() == HoldSnapshot.Phase.RUNNING
                            && said.started()) {
                        Peer next = Peer.pythonLock(paths.serverLock(), "flock-exclusive", "lilbee", "serve", "--pod", name);
                        Files.createSymbolicLink(proc.resolve(Long.toString(next.pid())), Path.of("/proc", Long.toString(next.pid())));
                        lilbees.add(next);
                        lilbee.set(next);
                    }
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    return;
                } catch (Exception | AssertionError e) {
                    // a lilbee that could not take its lock in time: the next loop starts another
                }
            }
        }

        boolean serving() {
            return warden.get().snapshot().serving();
        }

        /** Stand-ins that print "locked" hold an exclusive flock on a server.lock until they die. */
        long holding() {
            return lilbees.stream().filter(p -> p.process().isAlive()).count();
        }

        void close() throws Exception {
            running.set(false);
            kubelet.interrupt();
            kubelet.join();
            warden.get().stop();
            for (Peer peer : lilbees) {
                peer.close();
            }
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
        Path root = dir.resolve("root");
        paths = new LilbeePaths(root, root.resolve("data"), root.resolve("data/lancedb"), Optional.empty(), "soak");
        Files.createDirectories(paths.dataDir());
        pods.add(new Pod("a"));
        pods.add(new Pod("b"));
        AtomicBoolean sampling = new AtomicBoolean(true);
        AtomicReference<String> split = new AtomicReference<>();
        Thread sampler = Thread.ofPlatform().start(() -> {
            while (sampling.get() && split.get() == null) {
                long a = pods.get(0).holding();
                long b = pods.get(1).holding();
                if (a + b > 1) {
                    split.set("pod a runs " + a + " lilbee(s) holding a server.lock, pod b " + b);
                }
                Thread.onSpinWait();
            }
        });
        Random random = new Random(21);
        try {
            for (int round = 0; round < ROUNDS && split.get() == null; round++) {
                Pod serving = awaitOneServing(round);
                Files.deleteIfExists(paths.gateLock());
                Files.deleteIfExists(paths.serverLock());
                Thread.sleep(random.nextInt(101));
                serving.killWarden();
                Thread.sleep(random.nextInt(301));
                serving.startWarden();
                if (round % 3 == 2) {
                    Pod standby = pods.get(0) == serving ? pods.get(1) : pods.get(0);
                    standby.killWarden();
                    standby.startWarden();
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
        Await.until("round " + round + ": exactly one pod serves and only its lilbee holds a lock", () -> {
            List<Pod> ready = pods.stream().filter(Pod::serving).toList();
            one[0] = ready.size() == 1 ? ready.getFirst() : null;
            return one[0] != null && pods.stream().mapToLong(Pod::holding).sum() == 1;
        });
        assertTrue(one[0].holding() == 1);
        return one[0];
    }
}
