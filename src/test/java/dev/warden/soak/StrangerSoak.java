package dev.warden.soak;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.Await;
import dev.warden.testing.FakeEngine;
import dev.warden.testing.WardenProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Never signal a stranger: a serving warden finds an engine dir with no user and records that
 * point at processes that are not the engine they name. Each is a decision the reaper logs, and
 * not one of those processes gets a signal; the one real engine among them is stopped, by its pid
 * alone when its record names another process group.
 */
class StrangerSoak {

    @TempDir
    Path root;

    private static Path record(Path engineDir, String group, long pid, long pgid, double createdAt) throws Exception {
        Path file = engineDir.resolve("llama-swap.state." + group + "." + pid + ".json");
        Files.writeString(file, String.format(Locale.ROOT, "{\"pid\": %d, \"pgid\": %d, \"created_at\": %.3f, \"name\":"
                + " \"llama-swap\", \"member_ports\": [], \"proxy_port\": %d, \"launches\": 1}", pid, pgid, createdAt,
                FakeEngine.freePort()));
        return file;
    }

    @Test
    void noRecordMakesWardenSignalAProcessThatIsNotItsEngine() throws Exception {
        Path engineDir = Files.createDirectories(root.resolve("engine/engine-users")).getParent();
        try (FakeEngine reused = FakeEngine.startLlamaSwap("--port", "0");
                FakeEngine restarted = FakeEngine.startLlamaSwap("--port", "0");
                FakeEngine foreign = FakeEngine.startStranger("postgres");
                FakeEngine bystander = FakeEngine.startStranger("bystander");
                FakeEngine engine = FakeEngine.startLlamaSwap("--port", "0");
                WardenProcess warden = WardenProcess.serve("stranger", "--data-root", root.resolve("data").toString(),
                        "--engine-dir", engineDir.toString())) {
            warden.awaitReaper();
            // A pid now held by a llama-swap that started long after the recorded one (the pid was reused),
            // a recorded start after the process's real one, a program that is not llama-swap, pid 1, warden.
            List<Path> strangers = List.of(
                    record(engineDir, "reused", reused.pid(), reused.pid(), reused.createdAt() - 3600),
                    record(engineDir, "later", restarted.pid(), restarted.pid(), restarted.createdAt() + 120),
                    record(engineDir, "foreign", foreign.pid(), foreign.pid(), foreign.createdAt()),
                    record(engineDir, "init", 1, 1, 0),
                    record(engineDir, "self", warden.pid(), warden.pid(), 0));
            // The real engine, whose record names the bystander's process group.
            Path real = record(engineDir, "real", engine.pid(), bystander.pid(), engine.createdAt());

            assertEquals(143, engine.exitCode(Duration.ofSeconds(30)), warden.log());
            Await.until("every record is decided", () -> strangers.stream().noneMatch(Files::exists) && !Files.exists(real));
            String log = warden.log();
            for (String reason : List.of(
                    "pid " + reused.pid() + " started at", "pid " + restarted.pid() + " started at",
                    "pid " + foreign.pid() + " runs 'postgres', not llama-swap", "pid 1 is never signalled",
                    "pid " + warden.pid() + " is warden itself")) {
                assertTrue(log.contains("Not signalling the engine of ") && log.contains(reason), "no logged decision '"
                        + reason + "' in:\n" + log);
            }
            // A signal would show: each fake prints "term ..." on SIGTERM, and SIGKILL ends it.
            Thread.sleep(2500);
            for (FakeEngine process : List.of(reused, restarted, foreign, bystander)) {
                assertTrue(process.alive(), "pid " + process.pid() + " was killed\n" + log);
                assertFalse(process.printed().stream().anyMatch(l -> l.startsWith("term ")),
                        "pid " + process.pid() + " got SIGTERM\n" + log);
            }
            assertTrue(warden.process().isAlive());
            assertEquals(200, warden.status("/q/health/live"));
        }
    }
}
