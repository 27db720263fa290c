package dev.warden.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The packaged warden ({@code target/quarkus-app/quarkus-run.jar}) run as a real process on a
 * loopback port of its own, as Kubernetes would run it. Closing it kills it by pid.
 */
public final class WardenProcess implements AutoCloseable {

    private static final HttpClient HTTP = LoopbackHttp.HTTP;
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Process process;
    private final int port;
    private final int managementPort;
    private final Path log;
    /** The API token warden was started with, sent with every GET as a client that knows it would. */
    private final String token;

    /** Where warden listens as the test reaches it: loopback, or its pod's address in a network namespace of its own. */
    private final String host;

    /** The switch socket lilbee's supervisor connects to in gate mode: one of its own for every warden started. */
    private Path socket;

    private WardenProcess(Process process, String host, int port, int managementPort, Path log, String token) {
        this.process = process;
        this.host = host;
        this.token = token;
        this.port = port;
        this.managementPort = managementPort;
        this.log = log;
    }

    /** {@code warden serve ARGS} with its probes on a free loopback port. */
    public static WardenProcess serve(String name, String... args) throws IOException {
        return serve(name, List.of(), args);
    }

    /** {@code warden serve ARGS} with extra {@code -D} settings. */
    public static WardenProcess serve(String name, List<String> settings, String... args) throws IOException {
        return serve(name, java.util.Map.of(), null, settings, args);
    }

    /**
     * {@code warden serve ARGS} in {@code cwd} (null: this one), with {@code env} added to (or, for
     * empty values, removed from) the environment.
     */
    public static WardenProcess serve(String name, java.util.Map<String, String> env, Path cwd, List<String> settings,
            String... args) throws IOException {
        return start(List.of(), null, "127.0.0.1", name, env, cwd, settings, args);
    }

    /**
     * {@code warden serve ARGS} as another user (util-linux setpriv: needs root), with no supplementary
     * groups, from a copy of the packaged app that user can read (a checkout under /root is not).
     */
    public static WardenProcess serveAs(int uid, int gid, Path readableCopy, String name, List<String> settings, String... args)
            throws IOException {
        return serveAs(uid, gid, readableCopy, name, java.util.Map.of(), settings, args);
    }

    /** {@link #serveAs(int, int, Path, String, List, String...)} with {@code env} added to the environment. */
    public static WardenProcess serveAs(int uid, int gid, Path readableCopy, String name, java.util.Map<String, String> env,
            List<String> settings, String... args) throws IOException {
        copy(Path.of("target/quarkus-app").toAbsolutePath(), readableCopy);
        return start(Setpriv.as(uid, gid), readableCopy.resolve("quarkus-run.jar"), "127.0.0.1", name, env, null, settings, args);
    }

    /**
     * {@code warden serve ARGS} in {@code pod}'s network namespace, listening on all of its addresses, after
     * {@code prefix} (prlimit, say); the test reaches it at the pod's address, as the kubelet would.
     */
    public static WardenProcess serveIn(PodNetwork pod, List<String> prefix, String name, List<String> settings, String... args)
            throws IOException {
        List<String> all = new ArrayList<>(prefix);
        all.addAll(pod.enter());
        List<String> anyAddress = new ArrayList<>(List.of("-Dquarkus.http.host=0.0.0.0", "-Dquarkus.management.host=0.0.0.0"));
        anyAddress.addAll(settings);
        return start(all, null, pod.podAddress(), name, java.util.Map.of(), null, anyAddress, args);
    }

    private static void copy(Path from, Path to) throws IOException {
        try (var files = Files.walk(from)) {
            for (Path file : (Iterable<Path>) files::iterator) {
                Path target = to.resolve(from.relativize(file).toString());
                if (Files.isDirectory(file)) {
                    Files.createDirectories(target);
                } else if (!Files.exists(target)) {
                    Files.copy(file, target);
                }
            }
        }
    }

    /** {@code prefix} (setpriv, or nothing), then warden ({@code jar}, or the build's own when null) with its ports, {@code serve ARGS}. */
    private static WardenProcess start(List<String> prefix, Path jar, String host, String name, java.util.Map<String, String> env,
            Path cwd, List<String> settings, String... args) throws IOException {
        int port = FakeEngine.freePort();
        int managementPort = FakeEngine.freePort();
        List<String> options = new ArrayList<>(List.of("-Dquarkus.http.port=" + port, "-Dquarkus.http.host=127.0.0.1",
                "-Dquarkus.management.port=" + managementPort, "-Dquarkus.management.host=127.0.0.1"));
        Path socket = settings.stream().filter(s -> s.startsWith(SOCKET_SETTING)).findFirst()
                .map(s -> Path.of(s.substring(SOCKET_SETTING.length()))).orElseGet(WardenProcess::switchSocket);
        options.add(SOCKET_SETTING + socket);
        // warden step-down's socket beside it: the default, /tmp/warden, would be every test warden's.
        options.add(CONTROL_SETTING + socket.resolveSibling("control.sock"));
        options.addAll(settings);
        // SIGINT at its default, as a terminal or a kubelet starts warden: a test run started as a background job of a
        // shell without job control inherits SIGINT ignored, which a JVM keeps ignored (ServeIT's SIGINT test).
        List<String> command = new ArrayList<>(List.of("env", "--default-signal=INT"));
        command.addAll(prefix);
        command.addAll(command(jar, options.toArray(String[]::new)));
        command.add("serve");
        command.addAll(List.of(args));
        Path log = logFile(name);
        ProcessBuilder builder = builder(command, name, env, cwd);
        Process process = builder.redirectErrorStream(true).redirectOutput(log.toFile()).start();
        WardenProcess warden = new WardenProcess(process, host, port, managementPort, log, tokenIn(settings));
        warden.socket = socket;
        return warden;
    }

    private static final String SOCKET_SETTING = "-Dwarden.gate.supervisor.socket=";
    private static final String CONTROL_SETTING = "-Dwarden.gate.control-socket=";

    /** A switch socket's path of its own, short enough for a Unix socket (the default, /run/warden, is the pod's). */
    public static Path switchSocket() {
        try {
            return Files.createTempDirectory("warden-switch-").resolve("switch.sock");
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** The setting that puts a warden's switch socket at {@code socket}. */
    public static String socketSetting(Path socket) {
        return SOCKET_SETTING + socket;
    }

    /** In gate mode: whether this warden lets its pod's lilbee run (its status's gate.started: a permit given). */
    public boolean permits() {
        try {
            return json("/api/v1/status").at("/gate/started").asBoolean();
        } catch (IOException | RuntimeException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Where {@code warden step-down} reaches this warden in gate mode. */
    public Path controlSocket() {
        return socket.resolveSibling("control.sock");
    }

    /** Where lilbee's supervisor reaches this warden in gate mode. */
    public Path socket() {
        return socket;
    }

    private static String tokenIn(List<String> settings) throws IOException {
        for (String setting : settings) {
            if (setting.startsWith("-Dwarden.api.token=")) {
                return setting.substring("-Dwarden.api.token=".length());
            }
            if (setting.startsWith("-Dwarden.api.token-file=")) {
                return Files.readString(Path.of(setting.substring("-Dwarden.api.token-file=".length()))).strip();
            }
        }
        return null;
    }

    /**
     * The command line of {@code warden serve ARGS} with {@code settings}, for a process the test does not
     * start itself (a test kubelet inside a pod's PID namespace).
     */
    public static List<String> serveCommand(List<String> settings, String... args) {
        List<String> command = command(null, settings.toArray(String[]::new));
        command.add("serve");
        command.addAll(List.of(args));
        return command;
    }

    /** Runs a one-shot command ({@code status}, {@code serve --no-wait}, ...) to its end. */
    public static Result run(String... args) throws IOException, InterruptedException {
        return run(java.util.Map.of(), args);
    }

    /** Runs a one-shot command with {@code env} added to (or, for empty values, removed from) the environment. */
    public static Result run(java.util.Map<String, String> env, String... args) throws IOException, InterruptedException {
        return run(env, null, args);
    }

    /** Runs a one-shot command in {@code cwd} (null: this one) with {@code env} as {@link #run(java.util.Map, String...)}. */
    public static Result run(java.util.Map<String, String> env, Path cwd, String... args) throws IOException, InterruptedException {
        return runUnder(List.of(), env, cwd, args);
    }

    /** The same, started by {@code launcher}, a program that execs the command it is given ({@link NoLocking}'s). */
    public static Result runUnder(List<String> launcher, java.util.Map<String, String> env, Path cwd, String... args)
            throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(launcher);
        command.addAll(command(null));
        command.addAll(List.of(args));
        ProcessBuilder builder = builder(command, "run", env, cwd);
        // Output to files, not pipes: a hung warden (or a command that outlives it) cannot hang the test.
        Path out = logFile("run-out");
        Path err = logFile("run-err");
        Process process = builder.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        process.getOutputStream().close();
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("warden " + String.join(" ", args) + " did not end within 60 s: " + Files.readString(err));
        }
        return new Result(process.exitValue(), Files.readString(out), Files.readString(err));
    }

    public record Result(int exitCode, String stdout, String stderr) {
    }

    private static ProcessBuilder builder(List<String> command, String name, java.util.Map<String, String> env, Path cwd)
            throws IOException {
        ProcessBuilder builder = new ProcessBuilder(command);
        isolate(builder, name);
        withEnvironment(builder, env);
        if (cwd != null) {
            builder.directory(cwd.toFile());
        }
        return builder;
    }

    /** Adds {@code env} to the builder's environment; an empty value removes the variable instead. */
    static ProcessBuilder withEnvironment(ProcessBuilder builder, java.util.Map<String, String> env) {
        merge(builder.environment(), env);
        return builder;
    }

    /** This process's environment with {@code env} added (an empty value removes the variable), for a process started otherwise. */
    static java.util.Map<String, String> environment(java.util.Map<String, String> env) {
        java.util.Map<String, String> merged = new java.util.HashMap<>(System.getenv());
        merge(merged, env);
        return merged;
    }

    private static void merge(java.util.Map<String, String> into, java.util.Map<String, String> env) {
        env.forEach((k, v) -> {
            if (v.isEmpty()) {
                into.remove(k);
            } else {
                into.put(k, v);
            }
        });
    }

    /** The one of {@code wardens} whose startup probe is UP; empty when none is, or more than one. */
    public static java.util.Optional<WardenProcess> theOneStarted(List<WardenProcess> wardens) {
        List<WardenProcess> started = wardens.stream().filter(w -> w.status("/q/health/started") == 200).toList();
        return started.size() == 1 ? java.util.Optional.of(started.getFirst()) : java.util.Optional.empty();
    }

    /**
     * A test's warden never touches this machine's own engine dir (~/.local/state/lilbee/engine):
     * without {@code --engine-dir} it gets one of its own under target/.
     */
    private static void isolate(ProcessBuilder builder, String name) throws IOException {
        builder.environment().remove("LILBEE_ENGINE_DIR");
        builder.environment().put("XDG_STATE_HOME",
                Files.createDirectories(Path.of("target", "it-state", name + "-" + System.nanoTime())).toAbsolutePath().toString());
    }

    /** The command that runs warden as the build made it (the packaged jar, or the native executable under -Pnative). */
    public static List<String> command() {
        return command(null);
    }

    /** Whether the tests run the native executable (-Pnative), which has no JVM: no attach mechanism, no JVM flags. */
    public static boolean nativeExecutable() {
        return !System.getProperty("warden.it.native", "").isEmpty();
    }

    /** The packaged warden: the fast-jar (or a readable copy of it), or with -Pnative the native executable (which takes -D settings too). */
    private static List<String> command(Path copiedJar, String... jvmOptions) {
        if (nativeExecutable()) {
            List<String> command = new ArrayList<>(List.of(System.getProperty("warden.it.native")));
            command.addAll(java.util.Arrays.stream(jvmOptions).filter(o -> o.startsWith("-D")).toList());
            return command;
        }
        String jar = (copiedJar != null ? copiedJar
                : Path.of(System.getProperty("warden.it.jar", "target/quarkus-app/quarkus-run.jar"))).toAbsolutePath().toString();
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> command = new ArrayList<>(List.of(java, "-Xshare:auto", "-XX:TieredStopAtLevel=1"));
        command.addAll(List.of(jvmOptions));
        command.addAll(List.of("-jar", jar));
        return command;
    }

    public static Path logFile(String name) throws IOException {
        Path dir = Path.of("target", "it-logs").toAbsolutePath();
        Files.createDirectories(dir);
        return dir.resolve(name + "-" + System.nanoTime() + ".log");
    }


    public long pid() {
        return process.pid();
    }

    /** The API's port. */
    public int port() {
        return port;
    }

    /** The management interface's port: probes and metrics. */
    public int managementPort() {
        return managementPort;
    }

    /** The paths under /q/ (probes, metrics) are served on the management port, the rest on the API's. */
    private URI uri(String path) {
        return URI.create("http://" + host + ":" + (path.startsWith("/q/") ? managementPort : port) + path);
    }

    public Process process() {
        return process;
    }

    /** The HTTP status of a probe, or -1 while nothing listens. */
    public int status(String probe) {
        try {
            return get(probe).statusCode();
        } catch (IOException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    public String text(String path) throws IOException, InterruptedException {
        return get(path).body();
    }

    public JsonNode json(String path) throws IOException, InterruptedException {
        return JSON.readTree(get(path).body());
    }

    /** POSTs to {@code path} with an optional bearer token; returns status and body. */
    public HttpResponse<String> post(String path, String token) throws IOException, InterruptedException {
        HttpRequest.Builder request = HttpRequest.newBuilder(uri(path))
                .timeout(Duration.ofSeconds(60)).POST(HttpRequest.BodyPublishers.noBody());
        if (token != null) {
            request.header("Authorization", "Bearer " + token);
        }
        return HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return get(path, token);
    }

    /** GETs {@code path} with an optional bearer token; returns status and body. */
    public HttpResponse<String> get(String path, String bearer) throws IOException, InterruptedException {
        HttpRequest.Builder request = HttpRequest.newBuilder(uri(path)).timeout(Duration.ofSeconds(5));
        if (bearer != null) {
            request.header("Authorization", "Bearer " + bearer);
        }
        return HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** Waits until the probe answers {@code code}; fails with warden's log when it never does. */
    public void awaitStatus(String probe, int code) {
        try {
            Await.until(probe + " answers " + code, () -> {
                if (!process.isAlive()) {
                    throw new AssertionError("warden exited with " + process.exitValue() + ":\n" + log());
                }
                return status(probe) == code;
            });
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "\nwarden's log:\n" + log(), e);
        }
    }

    /** Waits until the readiness probe's {@code locks} data has {@code value} under {@code key}. */
    public JsonNode awaitLockData(String key, String value) {
        JsonNode[] last = new JsonNode[1];
        try {
            Await.until("readiness data " + key + " is " + value, () -> {
                try {
                    for (JsonNode check : json("/q/health/ready").path("checks")) {
                        if ("locks".equals(check.path("name").asText())) {
                            last[0] = check;
                        }
                    }
                } catch (IOException e) {
                    return false;
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
                return last[0] != null && value.equals(last[0].path("data").path(key).asText());
            });
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "; last seen " + last[0] + "\nwarden's log:\n" + log(), e);
        }
        return last[0];
    }

    /** Waits until {@code GET path} answers JSON whose {@code pointer} satisfies {@code test}. */
    public JsonNode awaitJson(String path, String pointer, java.util.function.Predicate<JsonNode> test) {
        JsonNode[] last = new JsonNode[1];
        try {
            Await.until(path + " " + pointer + " as expected", () -> {
                try {
                    last[0] = json(path);
                    return test.test(last[0].at(pointer));
                } catch (IOException e) {
                    return false;
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            });
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "; last seen " + last[0] + "\nwarden's log:\n" + log(), e);
        }
        return last[0];
    }

    /** Waits until the reaper has claimed its lock or found another reaper: serve has fully started. */
    public JsonNode awaitReaper() {
        return awaitJson("/api/v1/status", "/reaper/detail", d -> !d.asText().isEmpty() && !"not watching".equals(d.asText()));
    }

    public String log() {
        try {
            return Files.readString(log);
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    /** Sends SIGTERM and returns the exit code. */
    public int terminate() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("warden did not exit on SIGTERM:\n" + log());
        }
        return process.exitValue();
    }

    public void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }

    @Override
    public void close() throws InterruptedException {
        kill();
    }
}
