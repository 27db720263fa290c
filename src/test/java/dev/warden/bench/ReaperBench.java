package dev.warden.bench;

import dev.warden.engine.EngineDir;
import dev.warden.lock.FileLocker;
import dev.warden.lock.HeldLock;
import dev.warden.lock.NativePosix;
import dev.warden.reaper.Reaper;
import dev.warden.testing.Await;
import dev.warden.testing.KernelLocks;
import dev.warden.testing.FakeEngine;
import dev.warden.testing.Peer;
import dev.warden.testing.SystemReaper;
import dev.warden.testing.WardenProcess;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Figures 2, 3 and 5: reaper reaction, probe cost under load, and the cost of one reaper pass. */
class ReaperBench {

    private static final int REACTIONS = Integer.getInteger("warden.bench.reactions", 30);
    private static final int RATE = 1000;
    private static final int RECORD_TRIALS = Integer.getInteger("warden.bench.record-trials", 5);
    private static final Duration LOAD = Duration.ofSeconds(Long.getLong("warden.bench.load-seconds", 30));
    private static final Duration WARM_UP = Duration.ofSeconds(5);

    @TempDir
    Path dir;

    @Test
    void reaperReaction() throws Exception {
        Path engine = Files.createDirectories(dir.resolve("engine/engine-users")).getParent();
        long[] micros = new long[REACTIONS];
        try (WardenProcess warden = WardenProcess.serve("bench-reaper", "--data-root", dir.resolve("root").toString(),
                "--engine-dir", engine.toString())) {
            warden.awaitReaper();
            for (int i = 0; i < REACTIONS; i++) {
                try (FakeEngine llamaSwap = FakeEngine.startLlamaSwap("--port", "0");
                        Peer user = Peer.flockHolder(engine.resolve("engine-users/u" + i + ".lock"))) {
                    llamaSwap.writeRecord(engine, "chat", FakeEngine.freePort(), List.of());
                    // A real user lives long before it dies: let the reaper see it first (its watcher then
                    // waits in the kernel on the user's lock).
                    Await.until("the reaper watches the user", () -> KernelLocks.blockedWaiters() > 0);
                    long killedAt = System.nanoTime();
                    user.process().destroyForcibly();
                    llamaSwap.await(llamaSwap.printed().stream().filter(l -> l.startsWith("term ")).findFirst()
                            .orElseGet(() -> awaitTerm(llamaSwap)));
                    String term = llamaSwap.printed().stream().filter(l -> l.startsWith("term ")).findFirst().orElseThrow();
                    micros[i] = (Long.parseLong(term.substring(5)) - killedAt) / 1000;
                    llamaSwap.exitCode(Duration.ofSeconds(20));
                }
            }
        }
        Report.section("2. Reaper reaction",
                "`warden serve` with default settings (a pass every 1 s); a fake llama-swap recorded in the engine dir and"
                        + " one user (a util-linux flock holder on engine-users/*.lock), alive until the reaper has seen it."
                        + " The user is SIGKILLed; time until the engine's SIGTERM handler runs. " + REACTIONS + " trials.",
                List.of("| figure | median ms | p99 ms | min ms | max ms | trials | goal |", "|---|---|---|---|---|---|---|"),
                List.of(TakeoverBench.row("last user killed until the engine gets SIGTERM", TakeoverBench.stats(micros),
                        "p99 < interval + 100 ms (1,100 ms); aim < 100 ms")));
    }


    private static String awaitTerm(FakeEngine engine) {
        Await.until("the engine gets SIGTERM", () -> engine.printed().stream().anyMatch(l -> l.startsWith("term ")));
        return engine.printed().stream().filter(l -> l.startsWith("term ")).findFirst().orElseThrow();
    }

    @Test
    void probeCost() throws Exception {
        List<String> rows = new ArrayList<>();
        // The load comes from loopback, which is this pod's one peer: lift the peer's share so that a burst of the
        // open loop's connections measures the probe, not figure 10's limit.
        try (WardenProcess warden = WardenProcess.serve("bench-probes", List.of("-Dwarden.http.max-connections=512",
                "-Dwarden.http.max-connections-per-peer=256"),
                "--data-root", dir.resolve("root").toString(), "--engine-dir", dir.resolve("engine").toString())) {
            warden.awaitStatus("/q/health/ready", 200);
            HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
            String base = "http://127.0.0.1:" + warden.managementPort();
            for (String probe : List.of("/q/health/ready", "/q/health/live")) {
                load(http, URI.create(base + probe), probe, WARM_UP); // JIT and connection pool warm-up, not reported
                rows.add(load(http, URI.create(base + probe), probe, LOAD));
            }
        }
        Report.section("3. Probe cost",
                "A fixed rate of " + RATE + " requests/s for " + LOAD.toSeconds() + " s per probe (after " + WARM_UP.toSeconds()
                        + " s of the same load, not reported) from a Java HTTP/1.1 client"
                        + " in another process on loopback (open loop: a request is sent on schedule whether or not earlier"
                        + " ones have answered); latency from the scheduled send to the answer.",
                List.of("| probe | median ms | p99 ms | min ms | max ms | requests | errors | goal |",
                        "|---|---|---|---|---|---|---|---|"),
                rows);
    }

    private static String load(HttpClient http, URI uri, String probe, Duration duration) throws Exception {
        int total = (int) (RATE * duration.toSeconds());
        long[] micros = new long[total];
        AtomicInteger errors = new AtomicInteger();
        List<CompletableFuture<Void>> pending = new ArrayList<>(total);
        long start = System.nanoTime();
        for (int i = 0; i < total; i++) {
            long due = start + i * 1_000_000_000L / RATE;
            long wait = due - System.nanoTime();
            if (wait > 0) {
                java.util.concurrent.locks.LockSupport.parkNanos(wait);
            }
            int index = i;
            pending.add(http.sendAsync(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(5)).build(),
                    HttpResponse.BodyHandlers.discarding()).handle((response, failure) -> {
                        micros[index] = (System.nanoTime() - due) / 1000;
                        if (failure != null || response.statusCode() != 200) {
                            errors.incrementAndGet();
                        }
                        return null;
                    }));
        }
        CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new)).join();
        long[] sorted = TakeoverBench.stats(micros);
        return String.format(Locale.ROOT, "| %s | %.2f | %.2f | %.2f | %.2f | %d | %d | p99 < 5 ms, 0 errors |", probe,
                TakeoverBench.pct(sorted, 50), TakeoverBench.pct(sorted, 99), sorted[0] / 1000.0,
                sorted[sorted.length - 1] / 1000.0, total, errors.get());
    }

    @Test
    void passScale() throws Exception {
        List<String> rows = new ArrayList<>();
        FileLocker locker = new FileLocker(new NativePosix());
        for (int users : new int[] {10, 100, 1000, 10000}) {
            for (boolean allDead : new boolean[] {true, false}) {
                EngineDir engine = new EngineDir(Files.createDirectories(dir.resolve("scale-" + users + "-" + allDead)));
                Files.createDirectories(engine.usersDir());
                List<HeldLock> live = new ArrayList<>();
                // "all dead but one": the one live user sorts last, so the pass looks at every lock.
                for (int i = 0; i < users; i++) {
                    Path lock = engine.userLock(String.format(Locale.ROOT, "u%05d", i));
                    if (!allDead || i == users - 1) {
                        live.add(locker.tryLock(lock).orElseThrow());
                    } else {
                        Files.createFile(lock);
                    }
                }
                // The locks this JVM holds look live to a pass in this JVM too: flock is per open file.
                Reaper reaper = SystemReaper.of(engine, Duration.ofSeconds(5));
                long started = System.nanoTime();
                reaper.pass();
                long first = (System.nanoTime() - started) / 1000;
                started = System.nanoTime();
                reaper.pass();
                long second = (System.nanoTime() - started) / 1000;
                rows.add(String.format(Locale.ROOT, "| %,d user locks, %s | %.2f | %.2f |", users,
                        allDead ? "all dead but the last" : "all live (the pass stops at the first)", first / 1000.0, second / 1000.0));
                live.forEach(HeldLock::close);
            }
        }
        for (int count : new int[] {1, 2, 4, 8}) {
            List<Long> stopping = new ArrayList<>();
            List<Long> gone = new ArrayList<>();
            for (int trial = 0; trial < RECORD_TRIALS; trial++) {
                EngineDir engine = new EngineDir(Files.createDirectories(dir.resolve("records-" + count + "-" + trial)));
                Files.createDirectories(engine.usersDir());
                List<FakeEngine> engines = new ArrayList<>();
                try {
                    for (int i = 0; i < count; i++) {
                        FakeEngine fake = FakeEngine.startLlamaSwap("--port", "0");
                        engines.add(fake);
                        fake.writeRecord(engine.root(), "g" + i, FakeEngine.freePort(), List.of());
                    }
                    Reaper reaper = SystemReaper.of(engine, Duration.ofSeconds(5));
                    long started = System.nanoTime();
                    reaper.pass();
                    stopping.add((System.nanoTime() - started) / 1000);
                    // The same records once their engines have exited: read, found gone, deleted.
                    for (int i = 0; i < count; i++) {
                        engines.get(i).exitCode(Duration.ofSeconds(10));
                        Files.writeString(engine.root().resolve("llama-swap.state.g" + i + "." + engines.get(i).pid() + ".json"),
                                "{\"pid\": " + engines.get(i).pid() + ", \"name\": \"llama-swap\"}");
                    }
                    started = System.nanoTime();
                    reaper.pass();
                    gone.add((System.nanoTime() - started) / 1000);
                } finally {
                    for (FakeEngine fake : engines) {
                        fake.close();
                    }
                }
            }
            long[] stop = TakeoverBench.stats(stopping.stream().mapToLong(Long::longValue).toArray());
            long[] exited = TakeoverBench.stats(gone.stream().mapToLong(Long::longValue).toArray());
            rows.add(String.format(Locale.ROOT, "| %d record(s), engines running (the pass stops them all) | %.2f | |", count,
                    TakeoverBench.pct(stop, 50)));
            rows.add(String.format(Locale.ROOT, "| %d record(s), engines already exited | %.2f | |", count,
                    TakeoverBench.pct(exited, 50)));
        }
        Report.section("5. Scale of a pass",
                "One reaper pass, in-process. With many user locks (and no record): the first pass (which removes the"
                        + " dead users' files) and the pass after it. With 1 to 8 records and no user: the pass that stops"
                        + " every engine (SIGTERM to each fake llama-swap, which exits at once, and the wait for its exit),"
                        + " and a pass over the same records once their engines have exited; median of " + RECORD_TRIALS
                        + " runs each.",
                List.of("| engine dir | first pass ms | next pass ms |", "|---|---|---|"), rows);
    }
}
