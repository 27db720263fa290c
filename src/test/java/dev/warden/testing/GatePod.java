package dev.warden.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * One pod of lilbee's on this machine: its own PID namespace ({@code unshare --pid --fork --mount-proc
 * --kill-child}, as root), a test kubelet as its PID 1 (src/test/resources/gate/pod_kubelet.py) that
 * runs warden in gate mode as the sidecar and the real {@code lilbee serve} as the main container, on
 * loopback ports of the pod's own. A bare pod runs lilbee alone, restarted with the kubelet's back-off.
 * Killing the pod SIGKILLs the namespace's PID 1, and the kernel kills every process in it.
 */
public final class GatePod implements AutoCloseable {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(2);

    private final String name;
    private final Process unshare;
    private final Path events;
    private final int lilbeePort;
    private final int port;
    private final int managementPort;
    private final Path wardenLog;
    private final Path lilbeeLog;

    private GatePod(String name, Process unshare, Path events, int lilbeePort, int port, int managementPort, Path wardenLog,
            Path lilbeeLog) {
        this.port = port;
        this.name = name;
        this.unshare = unshare;
        this.events = events;
        this.lilbeePort = lilbeePort;
        this.managementPort = managementPort;
        this.wardenLog = wardenLog;
        this.lilbeeLog = lilbeeLog;
    }

    /** The kubelet's knobs: its back-off (10 s in Kubernetes) and how often it asks the startup probe (the chart's 1 s). */
    public record Kubelet(Duration backoff, Duration probePeriod) {
        public static final Kubelet KUBERNETES = new Kubelet(Duration.ofSeconds(10), Duration.ofSeconds(1));
    }

    /**
     * A pod of warden {@code serve --mode gate} and {@code lilbee serve} on {@code env}'s data root
     * ({@link LilbeeServe#environment}), readiness also asking lilbee's {@code /api/health}.
     */
    public static GatePod gated(String name, Map<String, String> env, Kubelet kubelet, String... wardenSettings)
            throws IOException {
        return start(name, env, kubelet, true, List.of(wardenSettings));
    }

    /** A pod of {@code lilbee serve} alone: without warden, as lilbee runs on Kubernetes today. */
    public static GatePod bare(String name, Map<String, String> env, Kubelet kubelet) throws IOException {
        return start(name, env, kubelet, false, List.of());
    }

    /** Pods need a PID namespace each: root, as CI runs (the test says so and stops where it is not). */
    public static void assumeRoot() {
        if (!"0".equals(dev.warden.lock.FileLocker.currentUid())) {
            String why = "pods in PID namespaces of their own need root (unshare --pid), as CI has";
            System.err.println("SKIPPED: " + why);
            org.junit.jupiter.api.Assumptions.abort(why);
        }
    }

    private static GatePod start(String name, Map<String, String> env, Kubelet kubelet, boolean gated,
            List<String> wardenSettings) throws IOException {
        int lilbeePort = FakeEngine.freePort();
        int port = FakeEngine.freePort();
        int managementPort = FakeEngine.freePort();
        Path events = WardenProcess.logFile(name + "-events");
        Path wardenLog = WardenProcess.logFile(name + "-warden");
        Path lilbeeLog = WardenProcess.logFile(name + "-lilbee");
        Map<String, String> environment = WardenProcess.environment(env);
        ObjectNode config = JSON.createObjectNode();
        config.put("events", events.toString());
        config.put("backoff", kubelet.backoff().toMillis() / 1000.0);
        config.put("probe_period", kubelet.probePeriod().toMillis() / 1000.0);
        config.put("started_url", "http://127.0.0.1:" + managementPort + "/q/health/started");
        ObjectNode lilbee = config.putObject("lilbee");
        lilbee.putPOJO("argv", List.of(LilbeeServe.command("lilbee").toString(), "serve", "--port", Integer.toString(lilbeePort)));
        lilbee.putPOJO("env", environment);
        lilbee.put("log", lilbeeLog.toString());
        if (gated) {
            List<String> settings = new ArrayList<>(List.of("-Dquarkus.http.port=" + port,
                    "-Dquarkus.http.host=127.0.0.1", "-Dquarkus.management.port=" + managementPort,
                    "-Dquarkus.management.host=127.0.0.1",
                    "-Dwarden.gate.health-url=http://127.0.0.1:" + lilbeePort + "/api/health"));
            settings.addAll(wardenSettings);
            ObjectNode warden = config.putObject("warden");
            warden.putPOJO("argv", WardenProcess.serveCommand(settings, "--mode", "gate"));
            warden.putPOJO("env", environment);
            warden.put("log", wardenLog.toString());
        }
        Path configFile = WardenProcess.logFile(name + "-kubelet").resolveSibling(name + "-kubelet-" + System.nanoTime() + ".json");
        Files.writeString(configFile, JSON.writeValueAsString(config));
        Path kubeletScript = Path.of("src/test/resources/gate/pod_kubelet.py").toAbsolutePath();
        Process unshare = new ProcessBuilder("unshare", "--pid", "--fork", "--mount-proc", "--kill-child",
                LilbeeServe.command("python").toString(), kubeletScript.toString(), configFile.toString())
                .redirectErrorStream(true).redirectOutput(WardenProcess.logFile(name + "-kubelet").toFile()).start();
        return new GatePod(name, unshare, events, lilbeePort, port, managementPort, wardenLog, lilbeeLog);
    }

    public String name() {
        return name;
    }

    public boolean alive() {
        return unshare.isAlive();
    }

    /** The status of one of warden's probes ({@code ready}, {@code started}, {@code live}), or -1 while it does not answer. */
    public int probe(String which) {
        return LoopbackHttp.status(managementPort, "/q/health/" + which, PROBE_TIMEOUT);
    }

    /** warden's {@code GET /api/v1/status}, parsed; empty while it does not answer. */
    public Optional<JsonNode> status() {
        return LoopbackHttp.body(port, "/api/v1/status", PROBE_TIMEOUT).map(body -> {
            try {
                return JSON.readTree(body);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
    }

    /** The readiness probe's whole answer, for messages. */
    public String readiness() {
        return LoopbackHttp.body(managementPort, "/q/health/ready", PROBE_TIMEOUT).orElse("(no answer)");
    }

    /** Whether this pod's lilbee accepts a connection: it binds its port only once it holds server.lock. */
    public boolean lilbeeListens() {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", lilbeePort), 200);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** The kubelet's events so far: container starts and exits with their codes, the startup probe's first UP. */
    public List<JsonNode> events() {
        try {
            List<JsonNode> all = new ArrayList<>();
            for (String line : Files.readAllLines(events)) {
                if (!line.isBlank()) {
                    all.add(JSON.readTree(line));
                }
            }
            return all;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The events of one container ({@code warden} or {@code lilbee}) of one kind ({@code start}, {@code exit}, {@code started}). */
    public List<JsonNode> events(String container, String event) {
        return events().stream().filter(e -> container.equals(e.path("container").asText())
                && event.equals(e.path("event").asText())).toList();
    }

    /** A process of the pod, as this machine sees it, whose command line contains {@code marker}. */
    public Optional<ProcessHandle> process(String marker) {
        return unshare.descendants().filter(p -> p.info().commandLine().orElse("").contains(marker)).findFirst();
    }

    /** The pod's warden (its JVM, or under -Pnative the executable) as this machine sees it. */
    public Optional<ProcessHandle> warden() {
        return process(WardenProcess.nativeExecutable() ? WardenProcess.command().getFirst() : "quarkus-run.jar");
    }

    /** The pod's {@code lilbee serve} as this machine sees it. */
    public Optional<ProcessHandle> lilbee() {
        return process("lilbee serve");
    }

    public String logs() {
        return "--- " + name + " events:\n" + read(events) + "--- warden:\n" + tail(wardenLog) + "--- lilbee:\n" + tail(lilbeeLog);
    }

    private static String tail(Path file) {
        String text = read(file);
        return text.length() > 6000 ? "..." + text.substring(text.length() - 6000) : text;
    }

    private static String read(Path file) {
        try {
            return Files.exists(file) ? Files.readString(file) : "(none)\n";
        } catch (IOException e) {
            return "(unreadable: " + e + ")\n";
        }
    }

    /** SIGKILL to the pod's PID 1: every process of the pod dies at once, as when a node or a pod is killed. */
    public void kill() throws InterruptedException {
        killWhole(unshare);
    }

    /**
     * SIGKILL to {@code unshare} (which ignores SIGTERM while it waits for its child) and, by pid, to every
     * process it started, each waited for.
     */
    public static void killWhole(Process unshare) throws InterruptedException {
        List<ProcessHandle> members = unshare.descendants().toList();
        unshare.destroyForcibly();
        unshare.waitFor(30, TimeUnit.SECONDS);
        for (ProcessHandle member : members) {
            member.destroyForcibly();
            member.onExit().orTimeout(30, TimeUnit.SECONDS).exceptionally(e -> member).join();
        }
    }

    @Override
    public void close() throws InterruptedException {
        kill();
    }
}
