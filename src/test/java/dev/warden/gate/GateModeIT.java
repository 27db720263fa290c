package dev.warden.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.warden.testing.Await;
import dev.warden.testing.FakeEngine;
import dev.warden.testing.GatePod;
import dev.warden.testing.Peer;
import dev.warden.testing.Supervised;
import dev.warden.testing.WardenProcess;
import java.nio.file.Files;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import java.util.Map;
import dev.warden.testing.PromText;

/**
 * {@code warden serve --mode gate}, packaged, with the real lilbee supervisor running a stand-in for lilbee (Python
 * taking server.lock as filelock does). The real {@code lilbee serve} in PID namespaces of their own is GateInteropIT's;
 * the attacks that split a data dir before, in pods with PID and network namespaces of their own, GateAttacksIT's.
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
     * A short permit, grace and stall bound: the settle they ask for is the product's, and every first election waits it
     * (4 s more a wait at the chart's timings, which are checked elsewhere).
     */
    static final Supervised.Settings SUPERVISOR = new Supervised.Settings(Duration.ofSeconds(4), Duration.ofMillis(500));
    static final String SETTLE = "6s";
    /**
     * A permit that outlasts a JVM's restart on a busy machine (seen: 5.4 s), for a warden restarted in place, which
     * renews it before it ends.
     */
    static final Supervised.Settings OUTLASTS_A_RESTART = new Supervised.Settings(Duration.ofSeconds(8), Duration.ofMillis(500));

    /** warden's for {@code supervisor}'s permit and grace: the settle they ask for, a 1 s stall bound, then {@code more}. */
    private static List<String> settings(Supervised.Settings supervisor, String settle, String... more) {
        List<String> all = supervisor.wardenSettings("-Dwarden.gate.settle=" + settle, "-Dwarden.gate.supervisor.stall-bound=1s");
        all.addAll(List.of(more));
        return all;
    }

    /**
     * Two pods on this machine (one PID namespace: each lilbee is told apart by the supervisor that names it), each a
     * warden and the real supervisor running a lilbee stand-in: the elected one's lilbee runs and serves, the standby's
     * never starts, warden never takes server.lock, and a SIGTERM of the elected warden moves the gate to the standby,
     * whose lilbee serves once the first one's has stopped, never beside it.
     */
    @Test
    void theElectedPodsLilbeeRunsUnderItsSupervisorAndTheStandbysNever() throws Exception {
        Path root = dir.resolve("root");
        Path serverLock = root.resolve("data/server.lock");
        List<String> labelled = settings(SUPERVISOR, SETTLE, "-Dwarden.metrics.release=lilbee");
        try (WardenProcess elected = WardenProcess.serve("gate-elected", labelled, "--mode", "gate", "--data-root",
                root.toString());
                Supervised lilbeeA = Supervised.standIn("gate-elected", elected.socket(), serverLock, SUPERVISOR)) {
            elected.awaitStatus("/q/health/ready", 200);
            elected.awaitReaper();
            long servingPid = lilbeeA.serving().getFirst();
            String metrics = elected.text("/q/metrics");
            // Each series says which data dir and which release it is of: what the alerts count serving pods by.
            Map<String, String> labels = Map.of("data_dir", root.toRealPath().resolve("data").toString(), "release", "lilbee");
            assertEquals(1.0, PromText.value(metrics, "warden_gate_elected", labels).orElseThrow(), metrics);
            assertEquals(1.0, PromText.value(metrics, "warden_gate_started", labels).orElseThrow(), metrics);
            assertEquals(1.0, PromText.value(metrics, "warden_gate_serving", labels).orElseThrow(), metrics);
            assertEquals(1.0, PromText.value(metrics, "warden_serving", labels).orElseThrow(), metrics);
            assertEquals(1.0, PromText.value(metrics, "warden_gate_sees_pod_processes", labels).orElseThrow(), metrics);
            assertEquals(1.0, PromText.value(metrics, "warden_info", Map.of("mode", "gate")).orElseThrow(), metrics);
            assertTrue(PromText.value(metrics, "warden_gate_lease_duration_seconds").isEmpty(), "no Lease series in file mode");
            assertFalse(metrics.contains("warden_lock_held"), "no lock series for locks gate mode never holds");
            assertEquals(200, elected.status("/q/health/live"));
            JsonNode gate = check(elected, "/q/health/ready", "gate").path("data");
            assertEquals("elected", gate.path("gate.state").asText());
            assertEquals("held-in-pod", gate.path("server-lock.state").asText());
            assertEquals(servingPid, gate.path("server-lock.holder-pid").asLong());
            JsonNode status = elected.json("/api/v1/status");
            assertEquals("gate", status.path("mode").asText());
            assertEquals(servingPid, status.at("/gate/server_lock/holder_pid").asLong());
            assertTrue(status.at("/gate/serving").asBoolean());
            WardenProcess.Result look = WardenProcess.run(java.util.Map.of("WARDEN_MODE", "gate"), "status",
                    "--data-root", root.toString(), "--json");
            assertEquals(0, look.exitCode(), look.stderr());
            JsonNode locks = JSON.readTree(look.stdout());
            assertEquals("gate", locks.path("mode").asText());
            assertEquals(servingPid, lockNamed(locks, "data-dir").path("holder_pid").asLong());
            assertEquals(elected.pid(), lockNamed(locks, "gate").path("holder_pid").asLong());
            WardenProcess.Result text = WardenProcess.run(java.util.Map.of("WARDEN_MODE", "gate"), "status",
                    "--data-root", root.toString());
            assertTrue(text.stdout().startsWith("mode       gate\n"), text.stdout());

            try (WardenProcess standby = WardenProcess.serve("gate-standby", settings(SUPERVISOR, SETTLE), "--mode", "gate",
                    "--data-root", root.toString());
                    Supervised lilbeeB = Supervised.standIn("gate-standby", standby.socket(), serverLock, SUPERVISOR)) {
                standby.awaitJson("/api/v1/status", "/gate/state", s -> s.asText().equals("standby"));
                assertEquals(200, standby.status("/q/health/started"), "started: its supervisor may run, and waits for its word");
                assertEquals(503, standby.status("/q/health/ready"));
                assertEquals(200, standby.status("/q/health/live"));
                assertEquals(elected.pid(), standby.json("/api/v1/status").at("/gate/holder_pid").asLong());
                assertEquals(List.of(), lilbeeB.serving(), "a standby's lilbee never starts");

                OverlapCheck overlap = new OverlapCheck(lilbeeA, lilbeeB);
                assertEquals(0, elected.terminate(), "SIGTERM: exit 0");
                standby.awaitStatus("/q/health/ready", 200);
                overlap.stop();
                assertEquals(List.of(), lilbeeA.serving(), "the first pod's lilbee was stopped");
                assertEquals(1, lilbeeB.serving().size());
                assertEquals(0, overlap.both(), "two lilbees served at once " + overlap.both() + " times");
            }
        }
    }

    /**
     * A switchover: {@code warden step-down} in the serving pod hands the gate to the standby, whose lilbee serves once
     * the first one's has stopped, never beside it; asked again, the warden that stepped down, now a standby, has nothing
     * to hand over (exit 3); the new one, asked through the API with its token, hands the gate back at once (the first
     * stops holding back as soon as it sees the gate taken). Without the token the API refuses. The first lilbee, as
     * lilbee does, lets server.lock go and lingers seconds before it exits: the stepped-down warden unlocks the gate for
     * it then, so the standby serves while it still exits.
     */
    @Test
    void stepDownHandsTheGateToTheStandbyAndBack() throws Exception {
        Path root = dir.resolve("root");
        Path serverLock = root.resolve("data/server.lock");
        // A grace longer than the linger, so the first lilbee exits on its own, not by the supervisor's SIGKILL, and a
        // linger the standby's election, start and readiness fit in on a loaded machine; the settle its safety then asks.
        Supervised.Settings graceful = new Supervised.Settings(Duration.ofSeconds(4), Duration.ofSeconds(5));
        List<String> lingering = settings(graceful, "10s", "-Dwarden.api.token=switch-token");
        try (WardenProcess first = WardenProcess.serve("gate-switch-a", lingering, "--mode", "gate", "--data-root",
                root.toString());
                Supervised lilbeeA = Supervised.standIn("gate-switch-a", first.socket(), serverLock, graceful, List.of("linger=4"))) {
            first.awaitStatus("/q/health/ready", 200);
            try (WardenProcess second = WardenProcess.serve("gate-switch-b", lingering, "--mode", "gate", "--data-root",
                    root.toString());
                    Supervised lilbeeB = Supervised.standIn("gate-switch-b", second.socket(), serverLock, graceful)) {
                second.awaitJson("/api/v1/status", "/gate/state", s -> s.asText().equals("standby"));
                // Role routing's readiness: a standby is routable once it could serve at once if elected, having watched
                // the gate file for the settle; a fresh one is not before.
                JsonNode routable = check(second, "/q/health/group/routable", "gate-routable");
                assertEquals(routable.path("status").asText().equals("UP"), routable.at("/data/settled").asBoolean(), routable.toString());
                second.awaitStatus("/q/health/group/routable", 200);
                assertEquals(200, first.status("/q/health/group/routable"), "the serving pod is routable");
                OverlapCheck overlap = new OverlapCheck(lilbeeA, lilbeeB);
                Map<String, String> atFirst = Map.of("WARDEN_GATE_CONTROL_SOCKET", first.controlSocket().toString());
                WardenProcess.Result stepped = WardenProcess.run(atFirst, "step-down");
                assertEquals(0, stepped.exitCode(), stepped.stderr());
                assertTrue(stepped.stdout().startsWith("stepped down: stepped down, as asked"), stepped.stdout());
                second.awaitStatus("/q/health/ready", 200);
                assertEquals(1, lilbeeA.lingering().size(), "the standby serves while the first lilbee, done serving, still"
                        + " exits: " + lilbeeA.stateLines() + "\n" + first.log());
                assertEquals(503, first.status("/q/health/ready"));
                WardenProcess.Result again = WardenProcess.run(atFirst, "step-down");
                assertEquals(3, again.exitCode(), again.stdout() + again.stderr());
                assertTrue(again.stderr().contains("this warden is not elected, so it has nothing to hand over"), again.stderr());
                assertEquals(401, second.post("/api/v1/gate/step-down", "wrong").statusCode());
                HttpResponse<String> back = second.post("/api/v1/gate/step-down?wait=30", "switch-token");
                assertEquals(200, back.statusCode(), back.body());
                assertTrue(back.body().contains("\"stepped_down\":true"), back.body());
                first.awaitStatus("/q/health/ready", 200);
                overlap.stop();
                assertEquals(1, lilbeeA.serving().size());
                assertEquals(List.of(), lilbeeB.serving());
                assertEquals(0, overlap.both(), "two lilbees served at once " + overlap.both() + " times");
            }
        }
        WardenProcess.Result nobody = WardenProcess.run(Map.of("WARDEN_GATE_CONTROL_SOCKET", dir.resolve("none.sock").toString()),
                "step-down");
        assertEquals(1, nobody.exitCode());
        assertTrue(nobody.stderr().contains("no warden answers at " + dir.resolve("none.sock")), nobody.stderr());
    }

    /**
     * A warden SIGKILLed and started again beside its lilbee: the supervisor gives it the gate lock back, the same
     * lilbee serves again, never restarted, and the standby stays a standby.
     */
    @Test
    void aWardenRestartedInPlaceTakesTheGateBackAndItsLilbeeGoesOn() throws Exception {
        Path root = dir.resolve("root");
        Path serverLock = root.resolve("data/server.lock");
        Path socket = WardenProcess.switchSocket();
        List<String> inPlace = settings(OUTLASTS_A_RESTART, "10s", WardenProcess.socketSetting(socket));
        WardenProcess first = WardenProcess.serve("gate-first", inPlace, "--mode", "gate", "--data-root", root.toString());
        try (Supervised lilbee = Supervised.standIn("gate-in-place", socket, serverLock, OUTLASTS_A_RESTART)) {
            // Elected before the other starts: two wardens started at once may elect either.
            first.awaitStatus("/q/health/ready", 200);
            try (WardenProcess standby = WardenProcess.serve("gate-other", settings(OUTLASTS_A_RESTART, "10s"), "--mode", "gate",
                    "--data-root", root.toString());
                    Supervised other = Supervised.standIn("gate-other", standby.socket(), serverLock, OUTLASTS_A_RESTART)) {
                standby.awaitStatus("/q/health/started", 200);
                long servingPid = lilbee.serving().getFirst();
                first.kill();
                try (WardenProcess again = WardenProcess.serve("gate-again", inPlace, "--mode", "gate", "--data-root",
                        root.toString())) {
                    again.awaitStatus("/q/health/ready", 200);
                    assertEquals(List.of(servingPid), lilbee.serving(), "the same lilbee, never restarted");
                    assertEquals(1, lilbee.stateLines().size(), "one start in all: " + lilbee.stateLines());
                    assertEquals(List.of(), other.serving());
                    assertEquals("standby", standby.json("/api/v1/status").at("/gate/state").asText());
                }
            }
        } finally {
            first.close();
        }
    }

    /** Samples two pods' lilbees in a tight loop: how often both served at once. */
    static final class OverlapCheck {
        private final java.util.concurrent.atomic.AtomicInteger both = new java.util.concurrent.atomic.AtomicInteger();
        private final java.util.concurrent.atomic.AtomicBoolean running = new java.util.concurrent.atomic.AtomicBoolean(true);
        private final Thread sampler;

        OverlapCheck(Supervised a, Supervised b) {
            sampler = Thread.ofPlatform().start(() -> {
                while (running.get()) {
                    if (a.serving().size() + b.serving().size() > 1) {
                        both.incrementAndGet();
                    }
                    Thread.onSpinWait();
                }
            });
        }

        void stop() throws InterruptedException {
            running.set(false);
            sampler.join();
        }

        int both() {
            return both.get();
        }
    }

    /** lilbee answers at warden.gate.health-url with a 401 (it asks a token even there): that counts. */
    @Test
    void withAHealthUrlReadinessAlsoNeedsLilbeeToAnswer() throws Exception {
        Path root = dir.resolve("root");
        int lilbeePort = FakeEngine.freePort();
        try (WardenProcess warden = WardenProcess.serve("gate-health", settings(SUPERVISOR, SETTLE,
                "-Dwarden.gate.health-url=http://127.0.0.1:" + lilbeePort + "/api/health"),
                "--mode", "gate", "--data-root", root.toString());
                Supervised lilbee = Supervised.standIn("gate-health", warden.socket(), root.resolve("data/server.lock"),
                        SUPERVISOR)) {
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
            Await.until("warden says why it cannot gate", Duration.ofSeconds(60),
                    () -> !warden.isAlive() || GatePod.read(log).contains("warden gates lilbee serve"));
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

    /** Timings that could let two lilbees run are refused before anything starts, each naming both of its sides. */
    @Test
    void timingsThatCannotKeepTwoLilbeesApartAreAUsageError() throws Exception {
        WardenProcess.Result lease = WardenProcess.run(java.util.Map.of("WARDEN_GATE_ELECTION", "lease",
                "WARDEN_GATE_LEASE_DURATION", "10s", "WARDEN_GATE_LEASE_RENEW_DEADLINE", "8s"), "serve", "--mode", "gate",
                "--data-root", dir.resolve("root").toString());
        assertEquals(2, lease.exitCode(), lease.stderr());
        assertTrue(lease.stderr().contains("warden.gate.lease.renew-deadline (8000 ms) plus the longer of")
                && lease.stderr().contains("must be shorter than warden.gate.lease.duration (10000 ms)"), lease.stderr());
        WardenProcess.Result settle = WardenProcess.run(java.util.Map.of("WARDEN_GATE_SETTLE", "6s"), "serve", "--mode", "gate",
                "--data-root", dir.resolve("root").toString());
        assertEquals(2, settle.exitCode(), settle.stderr());
        assertTrue(settle.stderr().contains("warden.gate.supervisor.permit (5000 ms)")
                && settle.stderr().contains("warden.gate.settle (6000 ms)"), settle.stderr());
    }

    /** A switch socket that cannot be made: exit 1, naming the path and the fix. */
    @Test
    void aSwitchSocketThatCannotListenIsNamedWithTheFix() throws Exception {
        Path file = java.nio.file.Files.writeString(dir.resolve("not-a-dir"), "");
        WardenProcess.Result refused = WardenProcess.run(java.util.Map.of("WARDEN_GATE_SUPERVISOR_SOCKET",
                file.resolve("switch.sock").toString()), "serve", "--mode", "gate", "--data-root", dir.resolve("root").toString());
        assertEquals(1, refused.exitCode(), refused.stderr());
        assertTrue(refused.stderr().contains(file.toString()) && refused.stderr().contains("set warden.gate.supervisor.socket"),
                refused.stderr());
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
