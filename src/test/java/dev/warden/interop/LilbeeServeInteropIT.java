package dev.warden.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.warden.testing.Await;
import dev.warden.testing.KernelLocks;
import dev.warden.testing.LilbeeServe;
import dev.warden.testing.NoLocking;
import dev.warden.testing.WardenProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * warden beside the real {@code lilbee serve} 0.6.90b449 (full install from PyPI): one server per
 * data dir and per scope in both directions, a takeover when lilbee dies, the environment matrix
 * in which lilbee and warden must land on one lock file, and the real {@code lilbee reset}.
 */
class LilbeeServeInteropIT {

    /** lilbee waits 15 s for a held lock, then refuses; its start takes a few seconds more. */
    private static final Duration REFUSAL = Duration.ofSeconds(60);
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    private Path home;

    @BeforeEach
    void machine() throws Exception {
        dir = dir.toRealPath();
        home = Files.createDirectories(dir.resolve("home"));
    }

    private Map<String, String> env(String... pairs) {
        Map<String, String> given = new HashMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            given.put(pairs[i], pairs[i + 1]);
        }
        return LilbeeServe.environment(home, given);
    }

    private WardenProcess serve(String name, Map<String, String> env) throws Exception {
        return WardenProcess.serve(name, env, dir, List.of());
    }

    @Test
    void wardenHoldsTheDataDirSoLilbeeServeRefusesWithItsOwnExitCode() throws Exception {
        Map<String, String> env = env("LILBEE_DATA", dir.resolve("x").toString());
        try (WardenProcess warden = serve("lilbee-refused", env)) {
            warden.awaitStatus("/q/health/ready", 200);
            try (LilbeeServe lilbee = LilbeeServe.start(dir, env)) {
                assertEquals(3, lilbee.awaitExit(REFUSAL), lilbee.log());
                assertTrue(lilbee.log().contains("Another lilbee server is already running for this data directory"), lilbee.log());
            }
            assertEquals(200, warden.status("/q/health/ready"));
        }
    }

    /**
     * A data dir on a filesystem that cannot lock (every flock answered ENOLCK, as NFS without its lock daemon does):
     * the real lilbee serve refuses it and so does warden, in lilbee's own words; lilbee exits 3, warden 2 (no other
     * holder: the volume is wrong, and no wait mends it).
     */
    @Test
    void aDataDirThatCannotLockIsRefusedByLilbeeAndByWardenInLilbeesWords() throws Exception {
        Path root = dir.resolve("x");
        Map<String, String> env = env("LILBEE_DATA", root.toString());
        WardenProcess.Result lilbee = LilbeeServe.runUnder(NoLocking.launcher(), dir, env, "serve", "--port", "0");
        String sentence = root.resolve("data") + " is on a filesystem that does not support file locking. Move it to a local disk.";
        assertEquals(3, lilbee.exitCode(), lilbee.stdout());
        assertTrue(lilbee.stdout().contains(sentence), lilbee.stdout());
        WardenProcess.Result warden = WardenProcess.runUnder(NoLocking.launcher(), env, dir, "serve");
        assertEquals(2, warden.exitCode(), warden.stderr());
        assertTrue(warden.stderr().contains("warden: " + sentence), warden.stderr());
    }

    @Test
    void lilbeeServesSoWardenStandsByNamingItThenTakesOverWhenItIsKilled() throws Exception {
        Map<String, String> env = env("LILBEE_DATA", dir.resolve("x").toString());
        try (LilbeeServe lilbee = LilbeeServe.start(dir, env)) {
            assertEquals(dir.resolve("x/data/server.lock"), lilbee.awaitServing());
            try (WardenProcess warden = serve("lilbee-first", env)) {
                warden.awaitLockData("data-dir.holder-pid", Long.toString(lilbee.pid()));
                assertEquals(503, warden.status("/q/health/ready"));
                assertEquals(200, warden.status("/q/health/live"), "a standby is alive");
                long killed = System.nanoTime();
                lilbee.kill();
                warden.awaitStatus("/q/health/ready", 200);
                System.out.printf("lilbee serve SIGKILLed -> warden ready: %.1f ms (probe polled every 10 ms)%n",
                        (System.nanoTime() - killed) / 1e6);
                assertEquals(java.util.Set.of(warden.pid()), KernelLocks.flockHolders(dir.resolve("x/data/server.lock")));
            }
        }
    }

    @Test
    void lilbeeHoldsTheScopeSoWardenOnAnotherDataRootStandsByNamingLilbeesDataDir() throws Exception {
        String scope = dir.resolve("scope").toString();
        try (LilbeeServe lilbee = LilbeeServe.start(dir, env("LILBEE_DATA", dir.resolve("a").toString(), "LILBEE_EXCLUSIVE_SCOPE", scope))) {
            lilbee.awaitServing();
            try (WardenProcess warden = serve("lilbee-scope-first",
                    env("LILBEE_DATA", dir.resolve("b").toString(), "LILBEE_EXCLUSIVE_SCOPE", scope))) {
                JsonNode locks = warden.awaitLockData("scope.state", "held-elsewhere");
                assertEquals(dir.resolve("a/data").toString(), locks.at("/data/scope.owner.data-dir").asText(), locks.toString());
                assertEquals(Long.toString(lilbee.pid()), locks.at("/data/scope.holder-pid").asText(), locks.toString());
                lilbee.kill();
                warden.awaitStatus("/q/health/ready", 200);
            }
        }
    }

    @Test
    void wardenHoldsTheScopeSoLilbeeOnAnotherDataRootRefusesNamingWardensDataDir() throws Exception {
        String scope = dir.resolve("scope").toString();
        try (WardenProcess warden = serve("lilbee-scope-refused",
                env("LILBEE_DATA", dir.resolve("b").toString(), "LILBEE_EXCLUSIVE_SCOPE", scope))) {
            warden.awaitStatus("/q/health/ready", 200);
            try (LilbeeServe lilbee = LilbeeServe.start(dir, env("LILBEE_DATA", dir.resolve("a").toString(), "LILBEE_EXCLUSIVE_SCOPE", scope))) {
                assertEquals(3, lilbee.awaitExit(REFUSAL), lilbee.log());
                assertTrue(lilbee.log().contains("It is serving " + dir.resolve("b/data")), lilbee.log());
            }
        }
    }

    /** One environment in which lilbee serve and warden must agree on the lock file. */
    private record Row(String name, Map<String, String> env, Path cwd, List<String> args) {
    }

    /**
     * Each row: the real lilbee serve takes its server.lock, and {@code warden status} in the same
     * environment and working directory names that very file as held by lilbee's pid.
     */
    @Test
    void inEveryEnvironmentWardenGuardsTheLockLilbeeServeTakes() throws Exception {
        Path project = Files.createDirectories(dir.resolve("project/.lilbee")).getParent();
        Path deeper = Files.createDirectories(project.resolve("sub/deeper"));
        Path defaultRoot = Files.createDirectories(dir.resolve("tomlhome/.local/share/lilbee"));
        Files.writeString(defaultRoot.resolve("config.toml"), "data_root = \"" + dir.resolve("from-toml") + "\"\n");
        Files.createDirectories(dir.resolve("a/b"));
        Files.createSymbolicLink(dir.resolve("link"), dir.resolve("a/b"));
        String x = dir.resolve("x").toString();
        List<Row> rows = new ArrayList<>(List.of(
                new Row("LILBEE_DATA", env("LILBEE_DATA", x), dir, List.of()),
                new Row("LILBEE_DATA_DIR and LILBEE_LANCEDB_DIR ignored", env("LILBEE_DATA", x,
                        "LILBEE_DATA_DIR", x + "/custom", "LILBEE_LANCEDB_DIR", x + "/lance"), dir, List.of()),
                new Row("LILBEE_DATA_ROOT", env("LILBEE_DATA_ROOT", dir.resolve("y").toString()), dir, List.of()),
                new Row("LILBEE_DATA over LILBEE_DATA_ROOT", env("LILBEE_DATA", x, "LILBEE_DATA_ROOT", dir.resolve("y").toString()),
                        dir, List.of()),
                new Row(".lilbee/ walk-up", env(), deeper, List.of()),
                new Row("LILBEE_DATA_ROOT over the walk-up", env("LILBEE_DATA_ROOT", dir.resolve("y").toString()), deeper, List.of()),
                new Row("config.toml data_root", env("HOME", dir.resolve("tomlhome").toString()), dir, List.of()),
                new Row("padded LILBEE_DATA", env("LILBEE_DATA", "  " + x + "  "), dir, List.of()),
                new Row("XDG_DATA_HOME", env("XDG_DATA_HOME", dir.resolve("xdg").toString()), dir, List.of()),
                new Row("--global over LILBEE_DATA and the walk-up", env("LILBEE_DATA", x), deeper, List.of("--global")),
                new Row("~ in LILBEE_DATA", env("LILBEE_DATA", "~/tilde"), dir, List.of()),
                new Row("a link then ..", env("LILBEE_DATA", dir + "/link/../z"), dir, List.of()),
                new Row("relative LILBEE_DATA", env("LILBEE_DATA", "rel"), deeper, List.of())));
        List<String> failures = new ArrayList<>();
        for (Row row : rows) {
            try (LilbeeServe lilbee = LilbeeServe.start(row.cwd(), row.env(), row.args().toArray(String[]::new))) {
                Path taken = lilbee.awaitServing();
                List<String> args = new ArrayList<>(List.of("status", "--json"));
                args.addAll(row.args());
                WardenProcess.Result status = WardenProcess.run(row.env(), row.cwd(), args.toArray(String[]::new));
                assertEquals(0, status.exitCode(), row.name() + ": " + status.stderr());
                JsonNode dataDirLock = null;
                for (JsonNode lock : JSON.readTree(status.stdout()).path("locks")) {
                    if ("data-dir".equals(lock.path("name").asText())) {
                        dataDirLock = lock;
                    }
                }
                String seen = row.name() + ": lilbee serve locks " + taken + ", warden looks at " + dataDirLock;
                if (dataDirLock == null || !taken.toString().equals(dataDirLock.path("path").asText())
                        || !"held".equals(dataDirLock.path("state").asText())
                        || dataDirLock.path("holder_pid").asLong() != lilbee.pid()) {
                    failures.add(seen);
                }
                System.out.println(seen);
            }
        }
        assertEquals(List.of(), failures, "warden and lilbee serve must never be on different lock files");
    }

    @Test
    void aRealResetUnderAServingWardenLeavesItHoldingAFreshServerLock() throws Exception {
        Map<String, String> env = env("LILBEE_DATA", dir.resolve("x").toString());
        try (WardenProcess warden = serve("lilbee-reset", env)) {
            warden.awaitStatus("/q/health/ready", 200);
            Path serverLock = dir.resolve("x/data/server.lock");
            Path table = Files.createDirectories(dir.resolve("x/data/lancedb/chunks.lance"));
            WardenProcess.Result reset = LilbeeServe.run(dir, env, "reset", "--yes");
            assertEquals(0, reset.exitCode(), reset.stdout());
            assertFalse(Files.exists(table), "the reset emptied the data dir: " + reset.stdout());
            // ext4 may give the new file the old inode number: the keeper's own account is what tells.
            Await.until("warden let go of the deleted server.lock", () -> warden.log().contains(serverLock
                    + " was deleted or replaced while warden held it"));
            Await.until("warden holds a fresh server.lock", () -> KernelLocks.flockHolders(serverLock).contains(warden.pid()));
            warden.awaitStatus("/q/health/ready", 200);
        }
    }

    @Test
    void aBackupHoldMakesTheRealResetRefuseAndKeepsTheLibrary() throws Exception {
        Map<String, String> env = env("LILBEE_DATA", dir.resolve("x").toString());
        Path table = Files.createDirectories(dir.resolve("x/data/lancedb/chunks.lance"));
        Files.writeString(table.resolve("data"), "rows");
        String lilbee = LilbeeServe.command("lilbee").toString();

        WardenProcess.Result refused = WardenProcess.run(env, dir, "exec", "--hold", "backup", "--", lilbee, "reset", "--yes");
        assertEquals(1, refused.exitCode(), refused.stdout() + refused.stderr());
        assertTrue(refused.stdout().replaceAll("\\s+", " ").contains("A sync, an import, an add or a wiki build is running on this library"),
                refused.stdout());
        assertTrue(Files.exists(table.resolve("data")), "a reset refused under a backup hold deletes nothing");

        // The write lock alone does not protect a copy: lilbee reset does not take it.
        WardenProcess.Result reset = WardenProcess.run(env, dir, "exec", "--hold", "write", "--", lilbee, "reset", "--yes");
        assertEquals(0, reset.exitCode(), reset.stdout() + reset.stderr());
        assertFalse(Files.exists(table), "the reset emptied the data dir under a write-only hold");
    }
}
