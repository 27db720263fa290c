package dev.warden.bench;

import dev.warden.lock.FileLocker;
import dev.warden.lock.HeldLock;
import dev.warden.lock.LockException;
import dev.warden.lock.NativePosix;
import dev.warden.testing.Await;
import dev.warden.testing.KernelLocks;
import dev.warden.testing.LilbeeServe;
import dev.warden.testing.Peer;
import dev.warden.testing.WardenProcess;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Benchmarks, not tests: {@code ./mvnw verify -Pbench} runs them and writes docs/BENCHMARKS.md.
 * Each figure measures warden and its peers in the same run on the same files, so the ratio holds
 * on a noisy machine. Times are CLOCK_MONOTONIC in every process (Java's nanoTime, Python's
 * monotonic_ns), so one process's "killed" and another's "locked" compare directly.
 */
class TakeoverBench {

    private static final int TRIALS = Integer.getInteger("warden.bench.trials", 100);

    @TempDir
    Path dir;

    /** What a Python waiter does once the lock is its own: print the monotonic clock. */
    private static final String FCNTL_WAITER = String.join("\n",
            "import fcntl, os, sys, time",
            "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o666)",
            "print('trying', flush=True)",
            "fcntl.flock(fd, fcntl.LOCK_EX)",
            "print(time.monotonic_ns(), flush=True)");
    private static final String FILELOCK_WAITER = String.join("\n",
            "import sys, time",
            "from filelock import FileLock",
            "lock = FileLock(sys.argv[1])",
            "print('trying', flush=True)",
            "lock.acquire()",
            "print(time.monotonic_ns(), flush=True)");

    @Test
    void lockTakeover() throws Exception {
        Path lock = dir.resolve("server.lock");
        Files.createFile(lock);
        List<String> rows = new ArrayList<>();
        // In the test's own JVM and in Python: under -Pnative only the two `warden serve` rows below run the executable.
        if (!WardenProcess.nativeExecutable()) {
            rows.add(row("warden (FileLocker, blocking flock on its own thread)", stats(measure(lock, this::wardenWaiter)),
                    "p99 < 10 ms; within 2x of the floor"));
            rows.add(row("kernel floor (Python fcntl.flock, blocking)", stats(measure(lock, l -> pythonWaiter("python3", FCNTL_WAITER, l, true))), ""));
            String python = System.getProperty("warden.interop.python", "");
            if (!python.isEmpty()) {
                rows.add(row("filelock 4.3.1 FileLock.acquire() (polls with LOCK_NB)", stats(measure(lock, l -> pythonWaiter(python, FILELOCK_WAITER, l, false))),
                        "warden well under it"));
            } else {
                rows.add("| filelock | not measured: no -Dinterop.python with filelock | | | | | |");
            }
        }
        long[] ready = readinessTakeover(false);
        rows.add(row("warden serve: holder killed until /q/health/ready is 200 (probe polled every 1 ms)", stats(ready), ""));
        rows.add(row("the same with a scope: one holder of the scope and the data-dir lock killed", stats(readinessTakeover(true)),
                "close to the row above"));
        Report.section("1. Lock takeover",
                "The holder (util-linux `flock --no-fork ... sleep`) is SIGKILLed; time from just before the kill until"
                        + " the waiter holds the lock. " + (WardenProcess.nativeExecutable() ? ready.length + " trials each."
                                : TRIALS + " trials each (readiness: " + ready.length + ")."),
                List.of("| waiter | median ms | p99 ms | min ms | max ms | trials | goal |", "|---|---|---|---|---|---|---|"),
                rows);
    }

    /** One waiter kind: starts waiting on the lock and completes with the monotonic time it got it. */
    private interface Waiter {
        Started start(Path lock) throws Exception;
    }

    private record Started(CompletableFuture<Long> lockedAt, AutoCloseable cleanup) {
    }

    private long[] measure(Path lock, Waiter waiter) throws Exception {
        long[] micros = new long[TRIALS];
        for (int i = 0; i < TRIALS; i++) {
            try (Peer holder = Peer.flockHolder(lock)) {
                Started started = waiter.start(lock);
                try (AutoCloseable cleanup = started.cleanup()) {
                    long killedAt = System.nanoTime();
                    holder.process().destroyForcibly();
                    long lockedAt = started.lockedAt().get(30, TimeUnit.SECONDS);
                    micros[i] = (lockedAt - killedAt) / 1000;
                }
            }
        }
        return micros;
    }

    private Started wardenWaiter(Path lock) {
        FileLocker locker = new FileLocker(new NativePosix());
        CompletableFuture<HeldLock> held = new CompletableFuture<>();
        CompletableFuture<Long> at = new CompletableFuture<>();
        Thread.ofPlatform().daemon().start(() -> {
            try {
                HeldLock l = locker.lock(lock);
                at.complete(System.nanoTime());
                held.complete(l);
            } catch (LockException e) {
                at.completeExceptionally(e);
            }
        });
        Await.until("warden waits in the kernel", () -> KernelLocks.blockedWaiters() > 0);
        return new Started(at, () -> held.get(30, TimeUnit.SECONDS).close());
    }

    private Started pythonWaiter(String python, String script, Path lock, boolean blocksInKernel) throws IOException {
        Process process = new ProcessBuilder(python, "-c", script, lock.toString()).redirectErrorStream(true).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream()));
        if (!"trying".equals(out.readLine())) {
            throw new AssertionError("the Python waiter did not start");
        }
        if (blocksInKernel) {
            Await.until("the peer waits in the kernel", () -> KernelLocks.blockedWaiters() > 0);
        } else {
            sleep(120); // filelock polls: let it settle into its loop
        }
        CompletableFuture<Long> at = CompletableFuture.supplyAsync(() -> {
            try {
                return Long.parseLong(out.readLine().trim());
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }, task -> Thread.ofPlatform().daemon().start(task));
        return new Started(at, () -> {
            process.destroyForcibly();
            process.waitFor();
        });
    }

    /**
     * @param scoped one process holds the scope lock and the data-dir lock, as {@code lilbee serve} with
     *     {@code LILBEE_EXCLUSIVE_SCOPE} does; warden waits on the scope, then takes the data dir
     */
    private long[] readinessTakeover(boolean scoped) throws Exception {
        Path root = dir.resolve(scoped ? "scoped-root" : "root");
        Path lock = Files.createDirectories(root.resolve("data")).resolve("server.lock");
        Path scope = Files.createDirectories(dir.resolve("scope"));
        int trials = Math.max(10, TRIALS / 5);
        long[] micros = new long[trials];
        for (int i = 0; i < trials; i++) {
            List<String> args = new ArrayList<>(List.of("--data-root", root.toString(), "--engine-dir", dir.resolve("engine").toString()));
            if (scoped) {
                args.addAll(List.of("--scope", scope.toString()));
            }
            try (Peer holder = scoped ? Peer.flockHolder(scope.resolve("server.scope.lock"), lock) : Peer.flockHolder(lock);
                    WardenProcess warden = WardenProcess.serve("bench-ready", args.toArray(String[]::new))) {
                warden.awaitLockData((scoped ? "scope" : "data-dir") + ".state", "held-elsewhere");
                long killedAt = System.nanoTime();
                holder.process().destroyForcibly();
                while (warden.status("/q/health/ready") != 200) {
                    sleep(1);
                }
                micros[i] = (System.nanoTime() - killedAt) / 1000;
            }
        }
        return micros;
    }


    /**
     * The real {@code lilbee serve} holds the data dir (with and without a scope) and is SIGKILLed;
     * time until a standing-by warden's readiness answers 200. Each trial starts both afresh.
     */
    @Test
    void takeoverFromTheRealLilbeeServe() throws Exception {
        LilbeeServe.command("lilbee");
        int trials = Integer.getInteger("warden.bench.lilbee-trials", 10);
        List<String> rows = new ArrayList<>();
        for (boolean scoped : new boolean[] {false, true}) {
            long[] micros = new long[trials];
            for (int i = 0; i < trials; i++) {
                Path trial = Files.createDirectories(dir.resolve("lilbee-" + scoped + "-" + i));
                Map<String, String> env = new HashMap<>(Map.of("LILBEE_DATA", trial.resolve("root").toString()));
                if (scoped) {
                    env.put("LILBEE_EXCLUSIVE_SCOPE", trial.resolve("scope").toString());
                }
                env = LilbeeServe.environment(Files.createDirectories(trial.resolve("home")), env);
                try (LilbeeServe lilbee = LilbeeServe.start(trial, env)) {
                    lilbee.awaitServing();
                    try (WardenProcess warden = WardenProcess.serve("bench-lilbee", env, trial, List.of())) {
                        warden.awaitLockData((scoped ? "scope" : "data-dir") + ".holder-pid", Long.toString(lilbee.pid()));
                        long killedAt = System.nanoTime();
                        lilbee.process().destroyForcibly();
                        while (warden.status("/q/health/ready") != 200) {
                            sleep(1);
                        }
                        micros[i] = (System.nanoTime() - killedAt) / 1000;
                    }
                }
            }
            rows.add(row("lilbee serve 0.6.90b449 SIGKILLed" + (scoped ? ", with LILBEE_EXCLUSIVE_SCOPE" : ""), stats(micros),
                    scoped ? "close to the row above" : "near the flock row of section 1"));
        }
        Report.section("1b. Takeover from the real lilbee serve",
                "The real `lilbee serve` (full install from PyPI, embedding off, nothing downloaded) holds its locks; a"
                        + " `warden serve` in the same environment stands by naming its pid; lilbee is SIGKILLed. Time from"
                        + " just before the kill until warden's /q/health/ready answers 200 (polled every 1 ms). " + trials
                        + " trials each; the kernel floor for the lock alone is in section 1.",
                List.of("| holder | median ms | p99 ms | min ms | max ms | trials | goal |", "|---|---|---|---|---|---|---|"),
                rows);
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static long[] stats(long[] micros) {
        long[] sorted = micros.clone();
        Arrays.sort(sorted);
        return sorted;
    }

    static String row(String what, long[] sorted, String goal) {
        return String.format(Locale.ROOT, "| %s | %.2f | %.2f | %.2f | %.2f | %d | %s |", what, pct(sorted, 50), pct(sorted, 99),
                sorted[0] / 1000.0, sorted[sorted.length - 1] / 1000.0, sorted.length, goal);
    }

    /** The nearest-rank percentile, in milliseconds. */
    static double pct(long[] sorted, int p) {
        int rank = (int) Math.ceil(p / 100.0 * sorted.length);
        return sorted[Math.max(0, rank - 1)] / 1000.0;
    }
}
