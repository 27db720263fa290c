package dev.warden.soak;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.warden.testing.Await;
import dev.warden.testing.FakeEngine;
import dev.warden.testing.Peer;
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
 * Bad input on the shared volume: each bad file gives a clear message naming it, warden keeps
 * serving (liveness stays up, the API answers), and no file the protocol says to keep is deleted.
 */
class BadInputSoak {

    @TempDir
    Path root;

    @Test
    void badRecordsABadSyncMarkAndADirectoryForTheLockFileAreNamedAndKept() throws Exception {
        Path data = Files.createDirectories(root.resolve("data"));
        Path lockDir = Files.createDirectory(data.resolve("server.lock"));
        Path syncLock = Files.writeString(root.resolve("sync.lock"), "lilbee was here, not SQLite");
        Path engineDir = Files.createDirectories(root.resolve("engine/engine-users")).getParent();
        Path userDir = Files.createDirectory(engineDir.resolve("engine-users/not-a-lock.lock"));
        List<Path> kept = new ArrayList<>(List.of(syncLock, userDir));
        String[] bad = {
            "",
            "{\"pid\": 4",
            "\u0000\u0001\u0002 binary",
            "[{\"pid\": 1}]",
            "{\"pid\": \"$(reboot)\", \"pgid\": \"-1\"}",
            "{\"pid\": 1.0e30}",
            "{\"pid\": " + "9".repeat(40) + "}",
            "{\"pid\": 1, \"junk\": \"" + "x".repeat(1_200_000) + "\"}",
        };
        for (int i = 0; i < bad.length; i++) {
            kept.add(Files.writeString(engineDir.resolve("llama-swap.state.bad" + i + "." + (100 + i) + ".json"), bad[i]));
        }
        try (FakeEngine engine = FakeEngine.startLlamaSwap("--port", "0");
                WardenProcess warden = WardenProcess.serve("bad-input", "--data-root", root.toString(),
                        "--engine-dir", engineDir.toString())) {
            // A real engine whose record carries hostile fields beside a good pid: the fields are dropped.
            Path hostile = engineDir.resolve("llama-swap.state.hostile." + engine.pid() + ".json");
            Files.writeString(hostile, String.format(Locale.ROOT, "{\"pid\": %d, \"pgid\": -1, \"created_at\": %.3f,"
                    + " \"name\": \"../../etc/passwd\", \"proxy_port\": -8080, \"member_ports\": [70000, -3, \"22\", 1e9, null],"
                    + " \"launches\": \"many\"}", engine.pid(), engine.createdAt()));

            JsonNode lock = warden.awaitLockData("data-dir.state", "error");
            assertTrue(lock.path("data").path("data-dir.error").asText().contains(lockDir + " is a directory"), lock.toString());
            assertEquals(503, warden.status("/q/health/ready"));
            assertEquals(200, warden.status("/q/health/live"));

            assertEquals(143, engine.exitCode(Duration.ofSeconds(30)), "the hostile record's engine is still ours\n" + warden.log());
            Await.until("the stopped engine's record is removed", () -> !Files.exists(hostile));

            JsonNode status = warden.awaitJson("/api/v1/status", "/library/error", e -> !e.isMissingNode());
            assertTrue(status.at("/library/error").asText().contains(syncLock.toString()), status.toString());
            assertTrue(status.at("/library/error").asText().contains("not a database"), status.toString());
            assertEquals(bad.length, status.at("/engines/0/unreadable_records").size(), status.toString());
            Await.until("each bad record is logged once it is not a write in flight",
                    () -> warden.log().split("is not a record \\(", -1).length - 1 >= bad.length);

            // The operator fixes the lock file; warden takes the lock without a restart.
            Files.delete(lockDir);
            warden.awaitStatus("/q/health/ready", 200);
            assertEquals(200, warden.status("/q/health/live"));
            for (Path file : kept) {
                assertTrue(Files.exists(file), file + " was deleted");
            }
            String log = warden.log();
            assertEquals(bad.length, log.split("is not a record \\(", -1).length - 1,
                    "each bad record is reported once, not once a pass:\n" + log);
        }
    }

    @Test
    void aCorruptOrHugeOwnerFileMeansAnUnknownHolderAndIsKept() throws Exception {
        Path scope = Files.createDirectories(root.resolve("scope"));
        for (String owner : List.of("{\"data_dir\": ", "{\"pid\": \"1\"; \"data_dir\": [\"/etc\"]}",
                "{\"data_dir\": \"" + "d".repeat(2_000_000) + "\"}")) {
            Path ownerFile = Files.writeString(scope.resolve("server.scope.owner.json"), owner);
            try (Peer holder = Peer.flockHolder(scope.resolve("server.scope.lock"));
                    WardenProcess warden = WardenProcess.serve("bad-owner", "--data-root", root.toString(),
                            "--scope", scope.toString())) {
                warden.awaitLockData("scope.state", "held-elsewhere");
                assertEquals(503, warden.status("/q/health/ready"));
                assertEquals(200, warden.status("/q/health/live"));
                JsonNode scopeLock = warden.json("/api/v1/status").at("/locks/0");
                assertEquals("held", scopeLock.path("state").asText(), scopeLock.toString());
                assertEquals(holder.process().pid(), scopeLock.path("holder_pid").asLong(), scopeLock.toString());
                assertTrue(scopeLock.at("/owner/data_dir").isNull(), "an unreadable owner file names no data dir: " + scopeLock);
                assertTrue(Files.exists(ownerFile), "another server's owner file is not warden's to delete");
                assertEquals(owner.length(), Files.size(ownerFile));
                holder.kill();
                warden.awaitStatus("/q/health/ready", 200);
            }
        }
    }

    @Test
    void aDataDirThatCannotBeCreatedAndASymlinkForTheLockFileAreNamed() throws Exception {
        Path blocker = Files.writeString(root.resolve("not-a-dir"), "a file where the data root should be");
        try (WardenProcess warden = WardenProcess.serve("no-data-dir", "--data-root", blocker.toString())) {
            JsonNode lock = warden.awaitLockData("data-dir.state", "error");
            assertTrue(lock.path("data").path("data-dir.error").asText().contains(blocker.toString()), lock.toString());
            assertEquals(200, warden.status("/q/health/live"));
        }
        assertTrue(Files.isRegularFile(blocker));

        Path data = Files.createDirectories(root.resolve("linked/data"));
        Path target = Files.writeString(root.resolve("elsewhere.lock"), "");
        Path link = Files.createSymbolicLink(data.resolve("server.lock"), target);
        try (WardenProcess warden = WardenProcess.serve("symlink", "--data-root", root.resolve("linked").toString())) {
            JsonNode lock = warden.awaitLockData("data-dir.state", "error");
            assertTrue(lock.path("data").path("data-dir.error").asText().contains(link.toString()), lock.toString());
            assertEquals(200, warden.status("/q/health/live"));
        }
        assertTrue(Files.isSymbolicLink(link) && Files.exists(target), "neither the link nor its target is touched");
    }
}
