package dev.warden.soak;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.engine.EngineDir;
import dev.warden.engine.EngineUsers;
import dev.warden.lock.FileLocker;
import dev.warden.lock.HeldLock;
import dev.warden.lock.NativePosix;
import dev.warden.testing.FakeEngine;
import dev.warden.testing.WardenProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Never stop a used engine: 1,000 rounds of users joining and leaving at random (this JVM is their
 * process, apart from warden's) while a serving warden reaps at its shortest interval (1 s). A user joins as
 * lilbee does: under the build lock, starting a new engine when the last one was stopped.
 *
 * <p>Each fake engine prints the monotonic time at which SIGTERM reached it; no user may have been
 * live at that instant. Every engine left without users must be stopped: the ones abandoned on
 * purpose during the run, and the last one at the end.
 */
class UsedEngineSoak {

    private static final int ROUNDS = Integer.getInteger("warden.soak.engine.rounds", 1000);

    @TempDir
    Path root;

    record Tenure(String user, long joined, long left) {
    }

    private final FileLocker locker = new FileLocker(new NativePosix());
    private final EngineUsers users = new EngineUsers(locker);
    private final List<FakeEngine> engines = new ArrayList<>();
    private final List<Tenure> tenures = new ArrayList<>();

    private record Member(String id, AutoCloseable lock, long joined) {
    }

    private FakeEngine startEngine(Path engineDir) throws Exception {
        FakeEngine engine = FakeEngine.startLlamaSwap("--port", "0");
        engines.add(engine);
        engine.writeRecord(engineDir, "chat", FakeEngine.freePort(), List.of());
        return engine;
    }

    private static boolean running(FakeEngine engine) {
        return engine.alive() && engine.printed().stream().noneMatch(l -> l.startsWith("term "));
    }

    @Test
    void noEngineIsStoppedWhileAUserLivesAndEveryAbandonedOneIs() throws Exception {
        Path engineDir = Files.createDirectories(root.resolve("engine/engine-users")).getParent();
        EngineDir dir = new EngineDir(engineDir);
        Random random = new Random(7);
        Deque<Member> live = new ArrayDeque<>();
        int abandoned = 0;
        int joins = 0;
        int races = 0;
        int restarts = 0;
        try (WardenProcess warden = WardenProcess.serve("used-engine", List.of("-Dwarden.reaper.interval=1s"),
                "--data-root", root.resolve("data").toString(), "--engine-dir", engineDir.toString())) {
            FakeEngine engine = startEngine(engineDir);
            warden.awaitReaper();
            for (int round = 0; round < ROUNDS; round++) {
                // Few users at a time (a join is less likely the more there are), so the engine is often left alone.
                if (random.nextInt(live.size() + 1) == 0) {
                    // Join as lilbee does: the build lock orders this against the reaper's stop.
                    try (HeldLock build = locker.lock(dir.buildLock())) {
                        if (!running(engine)) {
                            restarts++;
                            engine.exitCode(Duration.ofSeconds(30));
                            engine = startEngine(engineDir);
                        }
                        String id = "soak-" + joins++;
                        // One user in four will die rather than leave: its lock goes, its file stays for the reaper.
                        AutoCloseable lock = random.nextInt(4) == 0 ? locker.lock(dir.userLock(id)) : users.join(dir, id);
                        live.push(new Member(id, lock, System.nanoTime()));
                    }
                } else {
                    Member leaving = random.nextBoolean() ? live.pollFirst() : live.pollLast();
                    long left = System.nanoTime();
                    leaving.lock().close();
                    tenures.add(new Tenure(leaving.id(), leaving.joined(), left));
                    if (live.isEmpty() && random.nextInt(10) == 0) {
                        abandoned++;
                        assertEquals(143, engine.exitCode(Duration.ofSeconds(30)),
                                "an abandoned engine must get SIGTERM\n" + warden.log());
                    } else if (live.isEmpty()) {
                        races++;
                        // Come back within about one reaper interval, so each side wins some of the races.
                        Thread.sleep(random.nextInt(1500));
                    }
                }
                Thread.sleep(random.nextInt(5));
            }
            while (!live.isEmpty()) {
                Member leaving = live.pop();
                long left = System.nanoTime();
                leaving.lock().close();
                tenures.add(new Tenure(leaving.id(), leaving.joined(), left));
            }
            assertEquals(143, engine.exitCode(Duration.ofSeconds(30)), "the last engine must be stopped\n" + warden.log());
        } finally {
            for (FakeEngine engine : engines) {
                engine.close();
            }
        }

        List<String> violations = new ArrayList<>();
        for (FakeEngine engine : engines) {
            long term = engine.printed().stream().filter(l -> l.startsWith("term ")).mapToLong(l -> Long.parseLong(l.substring(5)))
                    .findFirst().orElseThrow(() -> new AssertionError("engine " + engine.pid() + " was never stopped"));
            for (Tenure tenure : tenures) {
                if (tenure.joined() < term && term < tenure.left()) {
                    violations.add("engine " + engine.pid() + " got SIGTERM while " + tenure.user() + " was live");
                }
            }
        }
        System.out.printf("used engine: %d rounds, %d joins, %d engines started and stopped, %d abandoned on purpose,"
                + " %d times a user came back within 1.5 s of the last one leaving, %d of them after the reaper had stopped"
                + " the engine%n", ROUNDS, joins, engines.size(), abandoned, races, restarts - abandoned);
        assertTrue(violations.isEmpty(), String.join("\n", violations));
        assertTrue(engines.size() > abandoned, "the run restarted engines after the reaper stopped them");
        try (var left = Files.list(dir.usersDir())) {
            List<Path> files = left.toList();
            assertTrue(files.isEmpty(), "the reaper removes dead users' files: " + files);
        }
    }
}
