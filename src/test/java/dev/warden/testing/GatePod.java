package dev.warden.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One pod of lilbee's on this machine, as the chart runs it: a network namespace of its own (a veth pair to this
 * machine, which plays the node; {@link PodNetwork}) and a PID namespace of its own ({@code unshare --pid --fork
 * --mount-proc --kill-child}, as root) whose PID 1 is a test kubelet (src/test/resources/gate/pod_kubelet.py). It runs
 * warden in gate mode on its default ports as the native sidecar, and lilbee's container exactly as the chart's
 * command does: the real supervisor (helm/warden/files/lilbee-supervisor.py) running the real {@code lilbee serve} on
 * port 8080, with the chart's liveness probes. A bare pod runs {@code lilbee serve} alone, restarted with the kubelet's
 * back-off. Killing the pod SIGKILLs the namespace's PID 1, and the kernel kills every process in it.
 */
public final class GatePod implements AutoCloseable {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(2);
    public static final int LILBEE_PORT = 8080;
    public static final int SUPERVISOR_PORT = 8081;
    public static final int API_PORT = 9095;
    public static final int MANAGEMENT_PORT = 9096;
    /** The API token every gated pod's warden is given, so that {@link #status} may ask from outside the pod. */
    private static final String API_TOKEN = "gate-pod-status-token";
    private static final Pattern EXIT = Pattern.compile("lilbee exited \\((-?\\d+)\\)");

    private final String name;
    private final PodNetwork network;
    private final Process unshare;
    private final Path events;
    private final Path socket;
    private final Path wardenLog;
    private final Path lilbeeLog;
    /**
     * Set before the pod is killed: its address then routes off this machine (whatever answers there is not the pod), so
     * nothing is sent to it.
     */
    private volatile boolean killed;

    private GatePod(String name, PodNetwork network, Process unshare, Path events, Path socket, Path wardenLog, Path lilbeeLog) {
        this.socket = socket;
        this.name = name;
        this.network = network;
        this.unshare = unshare;
        this.events = events;
        this.wardenLog = wardenLog;
        this.lilbeeLog = lilbeeLog;
    }

    /**
     * The node's knobs: the kubelet's back-off (10 s in Kubernetes), how often it asks the startup probe (the chart's
     * 1 s), whether it probes lilbee's container over IPv6 (a single-stack IPv6 cluster's pod address), and whether the
     * runtime honours the chart's read-only mount of the switch's directory in lilbee's container (one that ignores it
     * leaves that container free to put a socket of its own there).
     */
    public record Kubelet(Duration backoff, Duration probePeriod, boolean probesOverIpv6, boolean readOnlyMounts) {
        public static final Kubelet KUBERNETES = new Kubelet(Duration.ofSeconds(10), Duration.ofSeconds(1));

        public Kubelet(Duration backoff, Duration probePeriod) {
            this(backoff, probePeriod, false, true);
        }

        public Kubelet probingOverIpv6() {
            return new Kubelet(backoff, probePeriod, true, readOnlyMounts);
        }

        public Kubelet ignoringReadOnlyMounts() {
            return new Kubelet(backoff, probePeriod, probesOverIpv6, false);
        }
    }

    /**
     * A pod of warden {@code serve --mode gate} and lilbee's supervisor running {@code lilbee serve}, on {@code env}'s data
     * root ({@link LilbeeServe#environment}), readiness also asking lilbee's {@code /api/health}.
     */
    public static GatePod gated(String name, Map<String, String> env, Kubelet kubelet, String... wardenSettings)
            throws IOException, InterruptedException {
        return gated(name, env, kubelet, Supervised.Settings.CHART, wardenSettings);
    }

    /** The same, with the supervisor's permit and grace given to it and to warden alike. */
    public static GatePod gated(String name, Map<String, String> env, Kubelet kubelet, Supervised.Settings supervisor,
            String... wardenSettings) throws IOException, InterruptedException {
        return start(name, env, kubelet, Optional.of(supervisor), List.of(wardenSettings));
    }

    /** A pod of {@code lilbee serve} alone: without warden, as lilbee runs on Kubernetes today. */
    public static GatePod bare(String name, Map<String, String> env, Kubelet kubelet) throws IOException, InterruptedException {
        return start(name, env, kubelet, Optional.empty(), List.of());
    }

    /** The one pod of {@code pods} Ready with its lilbee listening, once exactly one is (within {@code within}). */
    public static GatePod theOneServing(List<GatePod> pods, Duration within) {
        GatePod[] one = new GatePod[1];
        Await.until("exactly one pod serves", within, () -> {
            List<GatePod> ready = pods.stream().filter(p -> p.probe("ready") == 200 && p.lilbeeListens()).toList();
            one[0] = ready.size() == 1 ? ready.getFirst() : null;
            return one[0] != null;
        });
        return one[0];
    }

    /** The other pod of two. */
    public static GatePod other(List<GatePod> two, GatePod pod) {
        return two.get(0) == pod ? two.get(1) : two.get(0);
    }

    /** Pods need PID and network namespaces of their own: root, as CI has (the test says so and stops where it is not). */
    public static void assumeRoot() {
        if (!"0".equals(dev.warden.lock.FileLocker.currentUid())) {
            String why = "pods in PID and network namespaces of their own need root (unshare, ip netns), as CI has";
            System.err.println("SKIPPED: " + why);
            org.junit.jupiter.api.Assumptions.abort(why);
        }
    }

    private static GatePod start(String name, Map<String, String> env, Kubelet kubelet, Optional<Supervised.Settings> gated,
            List<String> wardenSettings) throws IOException, InterruptedException {
        PodNetwork network = PodNetwork.create();
        Path events = WardenProcess.logFile(name + "-events");
        Path wardenLog = WardenProcess.logFile(name + "-warden");
        Path lilbeeLog = WardenProcess.logFile(name + "-lilbee");
        Map<String, String> environment = WardenProcess.environment(env);
        Path socket = WardenProcess.switchSocket();
        ObjectNode config = JSON.createObjectNode();
        config.put("name", name);
        config.put("events", events.toString());
        config.put("backoff", kubelet.backoff().toMillis() / 1000.0);
        config.put("probe_period", kubelet.probePeriod().toMillis() / 1000.0);
        config.put("started_url", "http://127.0.0.1:" + MANAGEMENT_PORT + "/q/health/started");
        List<String> lilbeeServe = List.of(LilbeeServe.command("lilbee").toString(), "serve", "--host", "0.0.0.0", "--port",
                Integer.toString(LILBEE_PORT));
        ObjectNode lilbee = config.putObject("lilbee");
        lilbee.putPOJO("env", environment);
        lilbee.put("log", lilbeeLog.toString());
        if (gated.isPresent()) {
            Supervised.Settings supervisor = gated.get();
            // The chart's command, word for word but for the file's place (the chart mounts it at /opt/warden).
            List<String> command = new ArrayList<>(List.of(Supervised.python(), Supervised.SUPERVISOR.toString(), "--socket",
                    socket.toString()));
            command.addAll(supervisor.options());
            command.addAll(List.of("--health-port", Integer.toString(SUPERVISOR_PORT), "--prepare", "lilbee.cli,lilbee.server.*",
                    "--"));
            command.addAll(lilbeeServe);
            lilbee.putPOJO("argv", command);
            if (kubelet.readOnlyMounts()) {
                // As the chart mounts the switch's emptyDir in lilbee's container.
                lilbee.putPOJO("read_only", List.of(socket.getParent().toString()));
            }
            lilbee.set("liveness", liveness("http://" + (kubelet.probesOverIpv6() ? "[::1]" : "127.0.0.1") + ":"
                    + SUPERVISOR_PORT + "/", 1, 2, 1));
            List<String> settings = new ArrayList<>(List.of("-Dquarkus.http.host=0.0.0.0", "-Dquarkus.management.host=0.0.0.0",
                    WardenProcess.socketSetting(socket), "-Dwarden.gate.health-url=http://127.0.0.1:" + LILBEE_PORT + "/api/health",
                    "-Dwarden.api.token=" + API_TOKEN));
            settings.addAll(supervisor.wardenSettings());
            settings.addAll(wardenSettings);
            ObjectNode warden = config.putObject("warden");
            warden.putPOJO("argv", WardenProcess.serveCommand(settings, "--mode", "gate"));
            warden.putPOJO("env", environment);
            warden.put("log", wardenLog.toString());
            warden.set("liveness", liveness("http://127.0.0.1:" + MANAGEMENT_PORT + "/q/health/live", 10, 3, 5));
        } else {
            lilbee.putPOJO("argv", lilbeeServe);
        }
        Path configFile = WardenProcess.logFile(name + "-kubelet").resolveSibling(name + "-kubelet-" + System.nanoTime() + ".json");
        Files.writeString(configFile, JSON.writeValueAsString(config));
        Path kubeletScript = Path.of("src/test/resources/gate/pod_kubelet.py").toAbsolutePath();
        List<String> command = new ArrayList<>(network.enter());
        command.addAll(List.of("unshare", "--pid", "--fork", "--mount-proc", "--kill-child",
                LilbeeServe.command("python").toString(), kubeletScript.toString(), configFile.toString()));
        Process unshare = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(WardenProcess.logFile(name + "-kubelet").toFile()).start();
        return new GatePod(name, network, unshare, events, socket, wardenLog, lilbeeLog);
    }

    /** The chart's liveness probes: {@code failures} in a row, {@code period} seconds apart, 1 s each, then {@code grace}. */
    private static ObjectNode liveness(String url, int period, int failures, int grace) {
        ObjectNode probe = JSON.createObjectNode();
        probe.put("url", url);
        probe.put("period", period);
        probe.put("timeout", 1);
        probe.put("failures", failures);
        probe.put("grace", grace);
        // The kubelet waits a period before its first probe.
        probe.put("initial", period);
        return probe;
    }

    public String name() {
        return name;
    }

    public boolean alive() {
        return unshare.isAlive();
    }

    /** The pod's address, where its warden, lilbee and supervisor listen on their ports. */
    public String address() {
        return network.podAddress();
    }

    /** The status of one of warden's probes ({@code ready}, {@code started}, {@code live}), or -1 while it does not answer. */
    public int probe(String which) {
        return probe(which, PROBE_TIMEOUT);
    }

    /** The same, given up after {@code timeout}. */
    public int probe(String which, Duration timeout) {
        return killed ? -1 : LoopbackHttp.status(address(), MANAGEMENT_PORT, "/q/health/" + which, timeout);
    }

    /**
     * Whether this pod's lilbee answers {@code /api/health} within {@code timeout} (a stopped one accepts, but says
     * nothing): any status below 500, as warden counts it (lilbee asks a token even there, and its 401 shows it serves).
     */
    public boolean lilbeeAnswers(Duration timeout) {
        int status = killed ? -1 : LoopbackHttp.status(address(), LILBEE_PORT, "/api/health", timeout);
        return status > 0 && status < 500;
    }

    /**
     * warden's {@code GET /api/v1/status}, parsed; empty while it does not answer. Asked from outside the pod, so with the
     * token: without one warden answers only a process of the pod.
     */
    public Optional<JsonNode> status() {
        if (killed) {
            return Optional.empty();
        }
        return LoopbackHttp.body(address(), API_PORT, "/api/v1/status", PROBE_TIMEOUT, API_TOKEN).map(body -> {
            try {
                return JSON.readTree(body);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
    }

    /** The gate's state, as warden's status says it; empty while it does not answer. */
    public Optional<String> gateState() {
        return status().map(s -> s.at("/gate/state").asText());
    }

    /** The readiness probe's whole answer, for messages. */
    public String readiness() {
        return killed ? "(killed)" : LoopbackHttp.body(address(), MANAGEMENT_PORT, "/q/health/ready", PROBE_TIMEOUT).orElse("(no answer)");
    }

    /** Whether this pod's lilbee accepts a connection: it binds its port only once it holds server.lock. */
    public boolean lilbeeListens() {
        if (killed) {
            return false;
        }
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(address(), LILBEE_PORT), 200);
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

    /** How often the supervisor started {@code lilbee serve} in this pod (its container's log says each). */
    public int lilbeeStarts() {
        return (int) read(lilbeeLog).lines().filter(line -> line.contains("warden's permit: starting lilbee")).count();
    }

    /** How many of those started in the process the supervisor prepared (a warm start). */
    public int warmStarts() {
        return (int) read(lilbeeLog).lines().filter(line -> line.contains("starting lilbee in its prepared process")).count();
    }

    /** The exit codes of every {@code lilbee serve} this pod's supervisor ran, in order. */
    public List<Integer> lilbeeExits() {
        List<Integer> codes = new ArrayList<>();
        Matcher matcher = EXIT.matcher(read(lilbeeLog));
        while (matcher.find()) {
            codes.add(Integer.parseInt(matcher.group(1)));
        }
        return codes;
    }

    /** A process of the pod, as this machine sees it, whose command line contains {@code marker} (and not the supervisor's). */
    public Optional<ProcessHandle> process(String marker) {
        return unshare.descendants().filter(p -> {
            String command = p.info().commandLine().orElse("");
            return command.contains(marker) && !command.contains("lilbee-supervisor.py");
        }).findFirst();
    }

    /** The pod's warden (its JVM, or under -Pnative the executable) as this machine sees it. */
    public Optional<ProcessHandle> warden() {
        return process(WardenProcess.nativeExecutable() ? WardenProcess.command().getFirst() : "quarkus-run.jar");
    }

    /** The pod's lilbee supervisor as this machine sees it. */
    public Optional<ProcessHandle> supervisor() {
        return unshare.descendants().filter(p -> {
            String command = p.info().commandLine().orElse("");
            return command.contains("lilbee-supervisor.py") && !command.contains("--prepared");
        }).findFirst();
    }

    /**
     * The pod's {@code lilbee serve} as this machine sees it: started cold, or running in the process its supervisor
     * prepared (which names itself {@code lilbee} once it runs lilbee's command).
     */
    public Optional<ProcessHandle> lilbee() {
        return process("lilbee serve").or(() -> prepared("lilbee"));
    }

    /** The process the pod's supervisor prepared, lilbee's modules loaded, waiting for a permit. */
    public Optional<ProcessHandle> prepared() {
        return prepared("lilbee-prepared");
    }

    private Optional<ProcessHandle> prepared(String name) {
        return unshare.descendants().filter(p -> p.info().commandLine().orElse("").contains("--prepared")
                && read(Path.of("/proc", Long.toString(p.pid()), "comm")).strip().equals(name)).findFirst();
    }

    /**
     * Starts {@code command} as a process of the pod: in its PID, mount and network namespaces (a neighbour in another
     * container of it). It dies with the pod; a test kills it sooner by pid.
     */
    public Process exec(String name, String... command) throws IOException {
        long kubelet = unshare.descendants().filter(p -> p.parent().map(parent -> parent.pid() == unshare.pid()).orElse(false))
                .findFirst().orElseThrow(() -> new IllegalStateException(this.name + " has no PID 1")).pid();
        List<String> all = new ArrayList<>(List.of("nsenter", "--target", Long.toString(kubelet), "--pid", "--mount", "--net",
                "--"));
        all.addAll(List.of(command));
        return new ProcessBuilder(all).redirectErrorStream(true).redirectOutput(WardenProcess.logFile(this.name + "-" + name)
                .toFile()).start();
    }

    /**
     * Starts {@code command} as a process of lilbee's container: in the supervisor's PID, mount and network namespaces
     * (a neighbour lilbee's own dependencies could run, with lilbee's mounts: the switch's directory read-only, unless
     * the runtime ignores that). It dies with the pod; a test kills it sooner by pid.
     */
    public Process execInLilbee(String name, String... command) throws IOException {
        long supervisor = supervisor().orElseThrow(() -> new IllegalStateException(this.name + " runs no supervisor")).pid();
        List<String> all = new ArrayList<>(List.of("nsenter", "--target", Long.toString(supervisor), "--pid", "--mount", "--net",
                "--"));
        all.addAll(List.of(command));
        return new ProcessBuilder(all).redirectErrorStream(true).redirectOutput(WardenProcess.logFile(this.name + "-" + name)
                .toFile()).start();
    }

    /**
     * {@code warden step-down}, as its HTTP form (the API port, with the token) asks it of this pod's warden, waiting up to
     * 30 s for the handover: the answer's status and body, or empty while warden does not answer.
     */
    public Optional<String> stepDown() throws InterruptedException {
        try {
            HttpResponse<String> answer = LoopbackHttp.HTTP.send(HttpRequest.newBuilder(URI.create("http://" + address() + ":"
                    + API_PORT + "/api/v1/gate/step-down?wait=30")).header("Authorization", "Bearer " + API_TOKEN)
                    .timeout(Duration.ofSeconds(40)).POST(HttpRequest.BodyPublishers.noBody()).build(),
                    HttpResponse.BodyHandlers.ofString());
            return Optional.of(answer.statusCode() + " " + answer.body());
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /**
     * Every process of the pod, its PID 1 included, stopped for {@code length} and then continued, as when the node's VM
     * is paused: SIGSTOP to them all at once, SIGCONT to them all at once.
     */
    public void freeze(Duration length) throws IOException, InterruptedException {
        List<String> pids = unshare.descendants().map(p -> Long.toString(p.pid())).toList();
        signal("-STOP", pids);
        Thread.sleep(length.toMillis());
        signal("-CONT", pids);
    }

    private static void signal(String signal, List<String> pids) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("kill", signal, "--"));
        command.addAll(pids);
        Command.ok(null, command);
    }

    /** Where the pod's warden listens for its supervisor: the switch socket's path, on this machine. */
    public Path switchSocket() {
        return socket;
    }

    public String logs() {
        return "--- " + name + " events:\n" + read(events) + "--- warden:\n" + tail(wardenLog) + "--- lilbee:\n" + tail(lilbeeLog);
    }

    private static String tail(Path file) {
        String text = read(file);
        return text.length() > 6000 ? "..." + text.substring(text.length() - 6000) : text;
    }

    /** A log's text so far, for waits and messages: never throws. */
    public static String read(Path file) {
        try {
            return Files.exists(file) ? Files.readString(file) : "(none)\n";
        } catch (IOException e) {
            return "(unreadable: " + e + ")\n";
        }
    }

    /** SIGKILL to the pod's PID 1: every process of the pod dies at once, as when a node or a pod is killed. */
    public void kill() throws InterruptedException {
        killed = true;
        killWhole(unshare);
        network.close();
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
