package dev.warden.bench;

import dev.warden.engine.EngineDir;
import dev.warden.engine.ProcessInfo;
import dev.warden.testing.Await;
import dev.warden.testing.Generation;
import dev.warden.testing.ImageJvm;
import dev.warden.testing.KernelLocks;
import dev.warden.testing.Peer;
import dev.warden.testing.RealLlamaServer;
import dev.warden.testing.RealLlamaSwap;
import dev.warden.testing.WardenProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Figure 13: the memory a real engine holds, given back when its last user dies. A real llama-server holds a generated
 * model in anonymous memory under the real llama-swap; its last user is SIGKILLed; time until the server's memory is
 * gone (the process has exited), not only until a signal was sent.
 */
class EngineMemoryBench {

    private static final int TRIALS = Integer.getInteger("warden.bench.memory-trials", 5);
    private static final int MODEL_MB = Integer.getInteger("warden.bench.memory-model-mb", 400);
    /** The keep-warm rows' idle time, subtracted from their figure: what is left is warden's part. */
    private static final Duration IDLE = Duration.ofSeconds(2);

    /** How the engine goes: warden stops the fleet, sweeps the server of a SIGKILLed llama-swap, or unloads it. */
    private enum Way {
        STOP("stop: SIGTERM to llama-swap, which stops its server"),
        SWEEP("orphan sweep: llama-swap SIGKILLed first, its server found by port and session"),
        UNLOAD("keep-warm unload through llama-swap, after the " + IDLE.toSeconds() + " s idle time (subtracted)");

        private final String what;

        Way(String what) {
            this.what = what;
        }
    }

    @TempDir
    Path dir;

    @Test
    void memoryGivenBack() throws Exception {
        Path model = RealLlamaServer.model(MODEL_MB);
        List<String> rows = new ArrayList<>();
        for (Way way : Way.values()) {
            for (boolean inFlight : new boolean[] {false, true}) {
                rows.add(measure(model, way, inFlight));
            }
        }
        Report.section("13. Memory given back",
                "A real llama.cpp llama-server (built by .ci/run from PyPI's llama.cpp source, CPU) under the real llama-swap"
                        + " v250, holding a generated " + MODEL_MB + " MiB GGUF in anonymous memory (`--load-mode none`: the CPU"
                        + " stand-in for memory a GPU holds), recorded as lilbee records it, with one user (a util-linux flock"
                        + " holder on engine-users/*.lock) that `warden serve` (default settings) watches. The user is SIGKILLed;"
                        + " time until the server's process has exited (its memory freed), polled every millisecond; in flight:"
                        + " a streamed chat completion is generating when the user dies. " + TRIALS + " trials each; every run"
                        + " ends with no process of the engine left (checked).",
                List.of("| way | generation | server RSS MiB | median ms | p99 ms | min ms | max ms | trials | goal |",
                        "|---|---|---|---|---|---|---|---|---|"),
                rows);
    }

    private String measure(Path model, Way way, boolean inFlight) throws Exception {
        long[] micros = new long[TRIALS];
        long rssKb = 0;
        for (int i = 0; i < TRIALS; i++) {
            // A warden and an engine dir of its own per trial: nothing of one trial is left for the next one's passes.
            Path root = Files.createDirectories(dir.resolve(way.name().toLowerCase(Locale.ROOT) + (inFlight ? "-busy-" : "-idle-") + i));
            EngineDir engine = new EngineDir(Files.createDirectories(root.resolve("engine/engine-users")).getParent());
            Path userLock = engine.userLock("bench");
            if (way == Way.UNLOAD) {
                Files.writeString(engine.usersDir().resolve("0123456789abcdef.keep-warm"), "");
            }
            List<String> settings = way == Way.UNLOAD ? List.of("-Dwarden.reaper.idle-ttl=" + IDLE.toMillis() + "ms") : List.of();
            try (RealLlamaSwap llamaSwap = RealLlamaSwap.start(root, model);
                    Peer user = Peer.flockHolder(userLock);
                    WardenProcess warden = WardenProcess.serve("bench-memory-" + root.getFileName(), settings,
                            "--data-root", root.resolve("lib").toString(), "--engine-dir", engine.root().toString())) {
                ProcessInfo server = llamaSwap.load(MODEL_MB);
                rssKb = Math.max(rssKb, ImageJvm.rssKb(server.pid()));
                llamaSwap.record(engine);
                // A real user lives long before it dies: the reaper has seen it and waits in the kernel on its lock.
                Await.until("the reaper watches the user", () -> KernelLocks.blockedWaiters(userLock) > 0);
                try (Generation generation = inFlight ? llamaSwap.generation() : null) {
                    if (way == Way.SWEEP) {
                        llamaSwap.process().destroyForcibly().waitFor();
                    }
                    long killed = System.nanoTime();
                    user.process().destroyForcibly();
                    while (RealLlamaSwap.holdsMemory(server.pid())) {
                        Thread.sleep(1);
                    }
                    micros[i] = (System.nanoTime() - killed) / 1000 - (way == Way.UNLOAD ? IDLE.toNanos() / 1000 : 0);
                }
                if (way == Way.UNLOAD) {
                    if (!llamaSwap.process().isAlive()) {
                        throw new AssertionError("a kept-warm llama-swap is unloaded, not stopped:\n" + warden.log());
                    }
                } else {
                    Await.until("llama-swap is gone too", () -> !RealLlamaSwap.holdsMemory(llamaSwap.pid()));
                }
                Await.until("no llama-server is left", () -> llamaSwap.server().isEmpty());
            }
        }
        long[] sorted = TakeoverBench.stats(micros);
        return String.format(Locale.ROOT, "| %s | %s | %.0f | %.2f | %.2f | %.2f | %.2f | %d | %s |", way.what,
                inFlight ? "in flight" : "idle", rssKb / 1024.0, TakeoverBench.pct(sorted, 50), TakeoverBench.pct(sorted, 99),
                sorted[0] / 1000.0, sorted[sorted.length - 1] / 1000.0, sorted.length, goal(way, inFlight));
    }

    private static String goal(Way way, boolean inFlight) {
        if (way == Way.UNLOAD) {
            return inFlight ? "within llama-swap's unloadTimeout (10 s), which ends in SIGKILL" : "reaction + the server's exit";
        }
        return inFlight ? "within warden's term timeout (5 s) + the sweep" : "reaction (figure 2) + the engine's own exit";
    }
}
