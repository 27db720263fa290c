package dev.warden.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.warden.testing.FakeEngine;
import dev.warden.testing.GatePod;
import dev.warden.testing.Peer;
import dev.warden.testing.WardenProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import java.util.Map;
import dev.warden.testing.PromText;

/**
 * {@code warden serve --mode gate}, packaged, against util-linux flock standing in for lilbee's
 * {@code server.lock} (a process of this machine: "in the pod"). The real {@code lilbee serve} in
 * PID namespaces of their own is GateInteropIT's.
 */
class GateModeIT {

    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    private JsonNode check(WardenProcess warden, String probe, String name) throws Exception {
        for (JsonNode check : warden.json(probe).path("checks")) {
            if (name.equals(check.path("name").asText())) {
                return check;
            }
        }
        throw new AssertionError("no " + name + " check in " + warden.text(probe));
    }

    /**
     * Two wardens on this machine share one PID namespace, where every process counts as "in the pod":
     * the standby is looked at before any lilbee holds server.lock (in separate pods, GateInteropIT).
     */
    @Test
    void theElectedWardenIsStartedNeverTakesTheServerLockAndIsReadyWhileLilbeeHoldsIt() throws Exception {
        Path root = dir.resolve("root");
        Path serverLock = root.resolve("data/server.lock");
        try (WardenProcess elected = WardenProcess.serve("gate-elected", List.of("-Dwarden.metrics.release=lilbee"), "--mode",
                "gate", "--data-root", root.toString())) {
            elected.awaitStatus("/q/health/started", 200);
            elected.awaitReaper();
            assertEquals(503, elected.status("/q/health/ready"), "no lilbee serves yet");
            String metrics = elected.text("/q/metrics");
            // Each series says which data dir and which release it is of: what the alerts count serving pods by.
            Map<String, String> labels = Map.of("data_dir", root.toRealPath().resolve("data").toString(), "release", "lilbee");
            assertEquals(1.0, PromText.value(metrics, "warden_gate_elected", labels).orElseThrow(), metrics);
            assertEquals(1.0, PromText.value(metrics, "warden_gate_started", labels).orElseThrow(), metrics);
            assertEquals(0.0, PromText.value(metrics, "warden_gate_serving", labels).orElseThrow(), metrics);
            assertEquals(0.0, PromText.value(metrics, "warden_serving", labels).orElseThrow(), "no lilbee serves yet");
            assertEquals(1.0, PromText.value(metrics, "warden_gate_sees_pod_processes", labels).orElseThrow(), metrics);
            assertEquals(1.0, PromText.value(metrics, "warden_info", Map.of("mode", "gate")).orElseThrow(), metrics);
            assertTrue(PromText.value(metrics, "warden_gate_lease_duration_seconds").isEmpty(), "no Lease series in file mode");
            assertFalse(metrics.contains("warden_lock_held"), "no lock series for locks gate mode never holds");
            assertEquals(200, elected.status("/q/health/live"));
            assertTrue(Peer.flockCanTake(serverLock), "warden never holds server.lock in gate mode");
            assertFalse(Peer.flockCanTake(root.resolve("data/warden-gate.lock")));
            try (WardenProcess standby = WardenProcess.serve("gate-standby", "--mode", "gate", "--data-root",
                    root.toString())) {
                standby.awaitJson("/api/v1/status", "/gate/state", s -> s.asText().equals("standby"));
                assertEquals(503, standby.status("/q/health/started"), "a standby's lilbee must not start");
                assertEquals(503, standby.status("/q/health/ready"));
                assertEquals(200, standby.status("/q/health/live"));
                assertEquals(elected.pid(), standby.json("/api/v1/status").at("/gate/holder_pid").asLong());
                assertEquals(0, standby.terminate(), "SIGTERM: exit 0");
            }
            try (Peer lilbee = Peer.flockHolder(serverLock)) {
                elected.awaitStatus("/q/health/ready", 200);
                JsonNode gate = check(elected, "/q/health/ready", "gate").path("data");
                assertEquals("elected", gate.path("gate.state").asText());
                assertEquals("held-in-pod", gate.path("server-lock.state").asText());
                assertEquals(lilbee.pid(), gate.path("server-lock.holder-pid").asLong());
                JsonNode status = elected.json("/api/v1/status");
                assertEquals("gate", status.path("mode").asText());
                assertEquals(lilbee.pid(), status.at("/gate/server_lock/holder_pid").asLong());
                assertTrue(status.at("/gate/serving").asBoolean());

                WardenProcess.Result look = WardenProcess.run(java.util.Map.of("WARDEN_MODE", "gate"), "status",
                        "--data-root", root.toString(), "--json");
                assertEquals(0, look.exitCode(), look.stderr());
                JsonNode locks = JSON.readTree(look.stdout());
                assertEquals("gate", locks.path("mode").asText());
                assertEquals(lilbee.pid(), lockNamed(locks, "data-dir").path("holder_pid").asLong());
                assertEquals(elected.pid(), lockNamed(locks, "gate").path("holder_pid").asLong());
                WardenProcess.Result text = WardenProcess.run(java.util.Map.of("WARDEN_MODE", "gate"), "status",
                        "--data-root", root.toString());
                assertTrue(text.stdout().startsWith("mode       gate\n"), text.stdout());
            }
            elected.awaitStatus("/q/health/ready", 503);
            assertEquals(200, elected.status("/q/health/started"), "started stays: lilbee restarts in the elected pod");
            try (WardenProcess next = WardenProcess.serve("gate-next", "--mode", "gate", "--data-root", root.toString())) {
                next.awaitJson("/api/v1/status", "/gate/state", s -> s.asText().equals("standby"));
                assertEquals(0, elected.terminate(), "SIGTERM: exit 0, the gate released");
                next.awaitStatus("/q/health/started", 200);
                assertEquals("elected", next.json("/api/v1/status").at("/gate/state").asText());
            }
        }
    }

    /** lilbee answers at warden.gate.health-url with a 401 (it asks a token even there): that counts. */
    @Test
    void withAHealthUrlReadinessAlsoNeedsLilbeeToAnswer() throws Exception {
        Path root = dir.resolve("root");
        int lilbeePort = FakeEngine.freePort();
        java.nio.file.Files.createDirectories(root.resolve("data"));
        try (WardenProcess warden = WardenProcess.serve("gate-health", List.of(
                "-Dwarden.gate.health-url=http://127.0.0.1:" + lilbeePort + "/api/health"),
                "--mode", "gate", "--data-root", root.toString());
                Peer lilbee = Peer.flockHolder(root.resolve("data/server.lock"))) {
            warden.awaitJson("/api/v1/status", "/gate/serving", JsonNode::asBoolean);
            assertEquals(503, warden.status("/q/health/ready"), "holding the lock, but not answering");
            assertTrue(check(warden, "/q/health/ready", "gate").at("/data/lilbee.answer").asText().startsWith("no answer"));
            try (Peer answering = Peer.httpAnswering(lilbeePort, 401)) {
                warden.awaitStatus("/q/health/ready", 200);
                assertEquals("HTTP 401", check(warden, "/q/health/ready", "gate").at("/data/lilbee.answer").asText());
            }
        }
    }

    @Test
    void aWardenAloneInItsPidNamespaceSaysThePodMustShareIt() throws Exception {
        GatePod.assumeRoot();
        List<String> command = new ArrayList<>(List.of("unshare", "--pid", "--fork", "--mount-proc", "--kill-child"));
        command.addAll(WardenProcess.serveCommand(List.of("-Dquarkus.http.port=" + FakeEngine.freePort(),
                "-Dquarkus.http.host=127.0.0.1", "-Dquarkus.management.port=" + FakeEngine.freePort(),
                "-Dquarkus.management.host=127.0.0.1"), "--mode", "gate", "--data-root", dir.resolve("root").toString()));
        Path log = WardenProcess.logFile("gate-pid-one");
        Process warden = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (!Files.readString(log).contains("warden gates lilbee serve") && System.nanoTime() < deadline) {
                assertTrue(warden.isAlive(), Files.readString(log));
                Thread.sleep(50);
            }
            String text = Files.readString(log);
            assertTrue(text.contains("it is PID 1 of a PID namespace of its own") && text.contains("shareProcessNamespace: true"),
                    text);
        } finally {
            GatePod.killWhole(warden);
        }
    }

    @Test
    void noWaitAndAnUnknownModeAreUsageErrors() throws Exception {
        WardenProcess.Result noWait = WardenProcess.run("serve", "--mode", "gate", "--no-wait", "--data-root",
                dir.resolve("root").toString());
        assertEquals(2, noWait.exitCode(), noWait.stderr());
        assertTrue(noWait.stderr().contains("--no-wait is for hold mode"), noWait.stderr());
        WardenProcess.Result unknown = WardenProcess.run("serve", "--mode", "elect");
        assertEquals(2, unknown.exitCode(), unknown.stderr());
        assertTrue(unknown.stderr().contains("'elect' is not a mode: use hold or gate"), unknown.stderr());
    }

    /** A Lease whose leader could still serve when the Lease passes to another pod is refused before anything starts. */
    @Test
    void leaseTimingsThatCannotKeepTwoLilbeesApartAreAUsageError() throws Exception {
        WardenProcess.Result unsafe = WardenProcess.run(java.util.Map.of("WARDEN_GATE_ELECTION", "lease",
                "WARDEN_GATE_LEASE_DURATION", "10s", "WARDEN_GATE_LEASE_RENEW_DEADLINE", "8s"), "serve", "--mode", "gate",
                "--data-root", dir.resolve("root").toString());
        assertEquals(2, unsafe.exitCode(), unsafe.stderr());
        assertTrue(unsafe.stderr().contains("must be shorter than warden.gate.lease.duration (10000 ms)"), unsafe.stderr());
    }

    private static JsonNode lockNamed(JsonNode status, String name) {
        for (JsonNode lock : status.path("locks")) {
            if (name.equals(lock.path("name").asText())) {
                return lock;
            }
        }
        throw new AssertionError("no " + name + " lock in " + status);
    }
}
