package dev.warden.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.warden.testing.NoLocking;
import dev.warden.testing.Peer;
import dev.warden.testing.WardenProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The packaged warden against util-linux flock and against itself, each a real process. */
class ServeIT {

    private static final String READY = "/q/health/ready";
    private static final String LIVE = "/q/health/live";
    private static final String STARTED = "/q/health/started";

    @TempDir
    Path dir;

    @Test
    void whileWardenServesFlockIsRefusedAndStatusNamesWarden() throws Exception {
        Path root = dir.resolve("root");
        try (WardenProcess warden = WardenProcess.serve("holder", "--data-root", root.toString())) {
            warden.awaitStatus(READY, 200);
            assertEquals(200, warden.status(STARTED));
            Path lock = root.resolve("data/server.lock");
            assertFalse(Peer.flockCanTake(lock), "flock -n must be refused while warden serves");

            WardenProcess.Result status = WardenProcess.run("status", "--data-root", root.toString(), "--json");
            assertEquals(0, status.exitCode(), status.stderr());
            JsonNode look = new com.fasterxml.jackson.databind.ObjectMapper().readTree(status.stdout());
            assertEquals("held", look.at("/locks/0/state").asText());
            assertEquals(warden.pid(), look.at("/locks/0/holder_pid").asLong());
            assertFalse(look.at("/library/sync_running").asBoolean());

            // A Python sync shows in the readiness data, and changes nothing about readiness.
            try (Peer sync = Peer.pythonSqlite(root.resolve("sync.lock"), "read", 5000)) {
                sync.awaitLine("locked", java.time.Duration.ofSeconds(20));
                warden.awaitJson("/q/health/ready", "/checks", checks -> {
                    for (JsonNode check : checks) {
                        if ("library".equals(check.path("name").asText())) {
                            return check.at("/data/sync-running").asBoolean();
                        }
                    }
                    return false;
                });
                assertEquals(200, warden.status(READY));
            }
        }
    }

    /**
     * A data root whose filesystem cannot lock (every flock answered ENOLCK, as on NFS without its lock daemon) is
     * refused at start, in either mode, with lilbee's own sentence and exit 2, waiting for nothing; only the lock file
     * the mode takes is created, as lilbee creates its own, and nothing else is touched.
     */
    @Test
    void aDataRootThatCannotLockIsRefusedAtStartInEitherMode() throws Exception {
        for (String mode : List.of("hold", "gate")) {
            Path root = dir.resolve("no-locks-" + mode);
            WardenProcess.Result refused = WardenProcess.runUnder(NoLocking.launcher(), java.util.Map.of(), null,
                    "serve", "--mode", mode, "--data-root", root.toString());
            assertEquals(2, refused.exitCode(), mode + ": " + refused.stderr());
            String lock = mode.equals("gate") ? "warden-gate.lock" : "server.lock";
            assertTrue(refused.stderr().contains("warden: " + root.resolve("data") + " is on a filesystem that does not support"
                    + " file locking. Move it to a local disk. (flock on " + root.resolve("data").resolve(lock) + " failed with ENOLCK"),
                    mode + ": " + refused.stderr());
            try (var files = Files.walk(root)) {
                assertEquals(List.of(root, root.resolve("data"), root.resolve("data").resolve(lock)), files.sorted().toList(), mode);
            }
        }
    }

    /**
     * lilbee's lock probe (a {@code sync.probe.<hex>} SQLite file in the data root, write-locked while lilbee checks that
     * the filesystem can lock) is lilbee's alone: warden serving, its status and a sync hold beside it never lock,
     * hold, replace or delete it, and leave no probe of their own.
     */
    @Test
    void lilbeesLockProbeIsNeverLockedHeldOrReaped() throws Exception {
        Path root = Files.createDirectories(dir.resolve("root"));
        Path probe = root.resolve("sync.probe.0123456789abcdef0123456789abcdef");
        try (Peer lilbeeProbe = Peer.pythonSqlite(probe, "write", 0)) {
            lilbeeProbe.awaitLine("locked", java.time.Duration.ofSeconds(20));
            Object inode = Files.getAttribute(probe, "unix:ino");
            try (WardenProcess warden = WardenProcess.serve("probe-beside", "--data-root", root.toString())) {
                warden.awaitStatus(READY, 200);
                warden.awaitReaper();
                assertEquals(0, WardenProcess.run("status", "--data-root", root.toString()).exitCode());
                WardenProcess.Result sync = WardenProcess.run("exec", "--data-root", root.toString(), "--hold", "sync", "--", "true");
                assertEquals(0, sync.exitCode(), sync.stderr());
            }
            assertEquals(inode, Files.getAttribute(probe, "unix:ino"), "the probe is the one lilbee made");
            try (Peer second = Peer.pythonSqlite(probe, "write", 0)) {
                assertEquals(7, second.process().waitFor(20, java.util.concurrent.TimeUnit.SECONDS) ? second.process().exitValue() : -1,
                        "lilbee's probe still holds its lock");
            }
        }
        try (var files = Files.list(root)) {
            assertEquals(List.of(probe.getFileName().toString()), files.map(p -> p.getFileName().toString())
                    .filter(n -> n.startsWith("sync.probe.")).toList(), "no probe of warden's is left");
        }
    }

    @Test
    void aFlockHolderMakesWardenAStandbyThatIsLiveButNotReadyUntilItExits() throws Exception {
        Path root = dir.resolve("root");
        Files.createDirectories(root.resolve("data"));
        try (Peer flock = Peer.flockHolder(root.resolve("data/server.lock"));
                WardenProcess warden = WardenProcess.serve("standby", "--data-root", root.toString())) {
            warden.awaitStatus(LIVE, 200);
            warden.awaitStatus(READY, 503);
            assertEquals(503, warden.status(STARTED), "a standby has not started while require-lock is on");
            JsonNode locks = warden.awaitLockData("data-dir.state", "held-elsewhere");
            assertEquals(flock.pid(), locks.at("/data/data-dir.holder-pid").asLong());

            flock.kill();
            warden.awaitStatus(READY, 200);
            assertEquals(200, warden.status(STARTED));
        }
    }

    @Test
    void ofTwoWardensOnOneDataDirOneIsReadyAndTheOtherTakesOverWhenItIsKilled() throws Exception {
        Path root = dir.resolve("root");
        try (WardenProcess first = WardenProcess.serve("first", "--data-root", root.toString())) {
            first.awaitStatus(READY, 200);
            try (WardenProcess second = WardenProcess.serve("second", "--data-root", root.toString())) {
                second.awaitStatus(LIVE, 200);
                second.awaitStatus(READY, 503);
                assertEquals(200, first.status(READY));

                first.kill();
                second.awaitStatus(READY, 200);
                assertFalse(Peer.flockCanTake(root.resolve("data/server.lock")));
            }
        }
    }

    @Test
    void aWardenOnAnotherDataDirUnderTheSameScopeIsRefusedByTheScopeLock() throws Exception {
        Path scope = dir.resolve("scope");
        Path rootA = dir.resolve("a");
        Path rootB = dir.resolve("b");
        try (WardenProcess first = WardenProcess.serve("scope-a", "--data-root", rootA.toString(), "--scope", scope.toString())) {
            first.awaitStatus(READY, 200);
            try (WardenProcess third = WardenProcess.serve("scope-b", "--data-root", rootB.toString(), "--scope", scope.toString())) {
                third.awaitStatus(LIVE, 200);
                third.awaitStatus(READY, 503);
                JsonNode locks = third.awaitLockData("scope.state", "held-elsewhere");
                assertEquals(rootA.resolve("data").toRealPath().toString(), locks.at("/data/scope.owner.data-dir").asText());
                assertEquals(first.pid(), locks.at("/data/scope.owner.pid").asLong());
                assertEquals("waiting", locks.at("/data/data-dir.state").asText());
                assertTrue(Peer.flockCanTake(rootB.resolve("data/server.lock")), "no data-dir lock before the scope");
            }

            WardenProcess.Result refused = WardenProcess.run("serve", "--no-wait", "--data-root", rootB.toString(), "--scope", scope.toString());
            assertEquals(3, refused.exitCode(), refused.stderr());
            assertTrue(refused.stderr().contains("served by the server of " + rootA.resolve("data").toRealPath()
                    + " (pid " + first.pid() + ")"), refused.stderr());
        }
    }

    @Test
    void sigtermReleasesEveryLockRemovesTheOwnerFileAndExitsZero() throws Exception {
        Path scope = dir.resolve("scope");
        Path root = dir.resolve("root");
        try (WardenProcess warden = WardenProcess.serve("sigterm", "--data-root", root.toString(), "--scope", scope.toString())) {
            warden.awaitStatus(READY, 200);
            assertTrue(Files.exists(scope.resolve("server.scope.owner.json")));
            assertEquals(0, warden.terminate(), warden.log());
            assertFalse(Files.exists(scope.resolve("server.scope.owner.json")));
            assertTrue(Files.exists(scope.resolve("server.scope.lock")), "lock files are never deleted");
            assertTrue(Peer.flockCanTake(scope.resolve("server.scope.lock")));
            assertTrue(Peer.flockCanTake(root.resolve("data/server.lock")));
        }
    }

    @Test
    void sigintAlsoReleasesEveryLockAndExitsZero() throws Exception {
        Path root = dir.resolve("root");
        try (WardenProcess warden = WardenProcess.serve("sigint", "--data-root", root.toString())) {
            warden.awaitStatus(READY, 200);
            new dev.warden.lock.NativePosix().kill(warden.pid(), 2);
            assertTrue(warden.process().waitFor(30, java.util.concurrent.TimeUnit.SECONDS), warden.log());
            assertEquals(0, warden.process().exitValue(), warden.log());
            assertTrue(Peer.flockCanTake(root.resolve("data/server.lock")));
        }
    }

    @Test
    void noWaitExitsThreeNamingTheHolderWhenFlockHoldsTheDataDir() throws Exception {
        Path root = dir.resolve("root");
        Files.createDirectories(root.resolve("data"));
        try (Peer flock = Peer.flockHolder(root.resolve("data/server.lock"))) {
            WardenProcess.Result refused = WardenProcess.run("serve", "--no-wait", "--data-root", root.toString());
            assertEquals(3, refused.exitCode(), refused.stderr());
            assertTrue(refused.stderr().contains(root.resolve("data/server.lock").toRealPath() + " (process " + flock.pid() + ")"),
                    refused.stderr());
        }
    }

    /**
     * A one-shot command beside a `warden serve` on the default ports (`kubectl exec ... warden status` in
     * the pod): it must not try to bind them. It failed with a stack trace once the management interface had
     * a port of its own.
     */
    @Test
    void aOneShotCommandRunsWhileTheDefaultPortsAreTaken() throws Exception {
        List<java.net.ServerSocket> taken = new java.util.ArrayList<>();
        try {
            for (int port : List.of(9095, 9096)) {
                try {
                    taken.add(new java.net.ServerSocket(port, 1, java.net.InetAddress.getLoopbackAddress()));
                } catch (java.io.IOException alreadyTaken) {
                    // taken by another process already: just as good
                }
            }
            WardenProcess.Result status = WardenProcess.run("status", "--data-root", dir.resolve("busy-ports").toString());
            assertEquals(0, status.exitCode(), status.stderr());
            assertTrue(status.stdout().contains("free (no lock file yet)"), status.stdout());
        } finally {
            for (java.net.ServerSocket socket : taken) {
                socket.close();
            }
        }
    }

    @Test
    void statusOnAnUntouchedDataRootCreatesNothing() throws Exception {
        Path root = dir.resolve("never-used");
        WardenProcess.Result status = WardenProcess.run("status", "--data-root", root.toString());
        assertEquals(0, status.exitCode(), status.stderr());
        assertTrue(status.stdout().contains("free (no lock file yet)"), status.stdout());
        assertFalse(Files.exists(root));
    }

    @Test
    void usageErrorsExitTwoWithAOneLineHint() throws Exception {
        WardenProcess.Result result = WardenProcess.run("serve", "--no-such-option");
        assertEquals(2, result.exitCode());
        assertTrue(result.stderr().contains("Unknown option: '--no-such-option'"), result.stderr());
        assertTrue(result.stderr().contains("Try 'warden serve --help'"), result.stderr());
        assertEquals(0, WardenProcess.run("--version").exitCode());
        WardenProcess.Result none = WardenProcess.run();
        assertEquals(2, none.exitCode());
        assertTrue(none.stderr().contains("Missing command"), none.stderr());
    }

    @Test
    void aReaperIntervalTheSchedulerCannotKeepIsRefusedNotRoundedUp() throws Exception {
        WardenProcess.Result result = WardenProcess.run(java.util.Map.of("WARDEN_REAPER_INTERVAL", "100ms"),
                "serve", "--data-root", dir.toString());
        assertEquals(2, result.exitCode(), result.stderr());
        assertTrue(result.stderr().contains("warden.reaper.interval is 100 ms"), result.stderr());
        assertTrue(result.stderr().contains("set it to 1s or more"), result.stderr());
        assertFalse(Files.exists(dir.resolve("data/server.lock")), "nothing is taken before the settings are checked");
    }

    @Test
    void connectionLimitsWithoutRoomForTheNodesShareAndANodeAddressThatIsNotOneAreRefused() throws Exception {
        WardenProcess.Result crowded = WardenProcess.run(java.util.Map.of("WARDEN_HTTP_MAX_CONNECTIONS", "40"),
                "serve", "--data-root", dir.toString());
        assertEquals(2, crowded.exitCode(), crowded.stderr());
        assertTrue(crowded.stderr().contains("warden.http.max-connections (40) must be at least twice"
                + " warden.http.max-connections-per-peer (32)"), crowded.stderr());
        WardenProcess.Result named = WardenProcess.run(java.util.Map.of("WARDEN_HTTP_NODE_ADDRESSES", "10.0.0.1,node-1"),
                "serve", "--data-root", dir.toString());
        assertEquals(2, named.exitCode(), named.stderr());
        assertTrue(named.stderr().contains("warden.http.node-addresses: \"node-1\" is not an IP address"), named.stderr());
        assertFalse(Files.exists(dir.resolve("data/server.lock")), "nothing is taken before the settings are checked");
    }

    @Test
    void lilbeeDataDirIsIgnoredAsLilbeeServeIgnoresItAndTheStartSaysSo() throws Exception {
        Path root = dir.resolve("lib");
        try (WardenProcess warden = WardenProcess.serve("ignored-data-dir", java.util.Map.of("LILBEE_DATA", root.toString(),
                "LILBEE_DATA_DIR", dir.resolve("custom").toString()), null, java.util.List.of())) {
            warden.awaitStatus(READY, 200);
            assertTrue(warden.log().contains("Data root " + root + " (from LILBEE_DATA)"), warden.log());
            assertTrue(warden.log().contains("LILBEE_DATA_DIR is set, but `lilbee serve` ignores it"), warden.log());
            assertTrue(warden.log().contains("warden guards " + root.resolve("data/server.lock")), warden.log());
            assertFalse(Peer.flockCanTake(root.resolve("data/server.lock")));
            assertFalse(Files.exists(dir.resolve("custom")));
        }
    }

    @Test
    void globalAndDataRootTogetherAreAUsageError() throws Exception {
        WardenProcess.Result result = WardenProcess.run("status", "--global", "--data-root", dir.toString());
        assertEquals(2, result.exitCode(), result.stderr());
        assertTrue(result.stderr().contains("--global and --data-root name two data roots"), result.stderr());
    }
}
