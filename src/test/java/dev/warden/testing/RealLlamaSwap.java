package dev.warden.testing;

import dev.warden.engine.EngineClient;
import dev.warden.engine.EngineDir;
import dev.warden.engine.ProcessInfo;
import dev.warden.engine.ProcessTable;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The real llama-swap (v250, {@code -Dinterop.llama-swap}) serving one model, {@value #MODEL}, with the real
 * llama-server ({@link RealLlamaServer}), started as lilbee starts it: in a session of its own, argv[0]
 * {@code llama-swap}, loopback ports, lilbee's record written on request. Closing it kills, by pid, llama-swap, its
 * descendants and any llama-server left on its member port.
 */
public final class RealLlamaSwap implements AutoCloseable {

    public static final String MODEL = "chat";
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    private final Process process;
    private final Path log;
    private final int proxy;
    private final int member;
    private final ProcessTable processes = new ProcessTable();

    private RealLlamaSwap(Process process, Path log, int proxy, int member) {
        this.process = process;
        this.log = log;
        this.proxy = proxy;
        this.member = member;
    }

    /** Starts one in {@code dir} (its config and log) serving {@code model}; returns once it answers. */
    public static RealLlamaSwap start(Path dir, Path model) throws IOException {
        String binary = InteropTools.path("llama-swap");
        int proxy = LoopbackPorts.next();
        int member = LoopbackPorts.next();
        Path config = Files.writeString(dir.resolve("config.yaml"), RealLlamaServer.llamaSwapConfig(MODEL, model, member));
        Path log = dir.resolve("llama-swap.log");
        Process process = new ProcessBuilder("setsid", "bash", "-c", "exec -a llama-swap \"$0\" \"$@\"", binary,
                "--config", config.toString(), "--listen", "127.0.0.1:" + proxy)
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        RealLlamaSwap llamaSwap = new RealLlamaSwap(process, log, proxy, member);
        EngineClient client = SystemReaper.client();
        Await.until("llama-swap answers /running", () -> client.answers(llamaSwap.endpoint()));
        return llamaSwap;
    }

    public Process process() {
        return process;
    }

    public long pid() {
        return process.pid();
    }

    public int proxyPort() {
        return proxy;
    }

    public int memberPort() {
        return member;
    }

    public EngineClient.Endpoint endpoint() {
        return EngineClient.Endpoint.configured(EngineClient.loopback(proxy));
    }

    /** A request through llama-swap to its model's {@code /health}, which makes llama-swap start the server. */
    public HttpResponse<String> ask() throws IOException, InterruptedException {
        return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + proxy + "/upstream/" + MODEL + "/health"))
                .timeout(Duration.ofSeconds(90)).build(), HttpResponse.BodyHandlers.ofString());
    }

    /** Loads the model and returns its server, having checked that the server holds the model in its own memory. */
    public ProcessInfo load(int modelMb) throws IOException, InterruptedException {
        HttpResponse<String> health = ask();
        if (health.statusCode() != 200 || !running().contains(MODEL)) {
            throw new AssertionError("llama-swap did not load " + MODEL + ": " + health.statusCode() + " " + health.body()
                    + "\n" + running() + "\n" + Files.readString(log));
        }
        ProcessInfo server = server().orElseThrow(() -> new AssertionError("no llama-server on port " + member));
        // --load-mode none: the weights are the server's own anonymous memory, which a stop must give back.
        long rssKb = ImageJvm.rssKb(server.pid());
        if (rssKb < modelMb * 1024L) {
            throw new AssertionError("the server holds " + rssKb + " KiB, less than its " + modelMb + " MiB model");
        }
        return server;
    }

    /** llama-swap's {@code /running}. */
    public String running() throws IOException, InterruptedException {
        return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + proxy + "/running")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
    }

    /** The llama-server on its member port, whoever its parent is now. */
    public Optional<ProcessInfo> server() {
        return processes.all().stream().filter(p -> p.isLlamaServer() && p.port().orElse(-1) == member).findFirst();
    }

    /** A streamed generation through llama-swap, in flight once this returns. */
    public Generation generation() throws InterruptedException {
        return Generation.start(proxy, MODEL).awaitTokens(Duration.ofSeconds(60));
    }

    /** lilbee's record of this llama-swap in {@code dir}, as lilbee writes it. */
    public Path record(EngineDir dir) throws IOException {
        Path record = dir.root().resolve("llama-swap.state." + MODEL + "." + pid() + ".json");
        return Files.writeString(record, String.format(Locale.ROOT,
                "{\"pid\": %d, \"pgid\": %d, \"created_at\": %.3f, \"name\": \"llama-swap\", \"member_ports\": [%d],"
                        + " \"proxy_port\": %d, \"launches\": 1}", pid(), pid(), FakeEngine.createdAt(pid()), member, proxy));
    }

    public String log() throws IOException {
        return Files.readString(log);
    }

    /** Whether {@code pid} still holds memory: it runs (a zombie, exited and not yet reaped, holds none). */
    public static boolean holdsMemory(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
            return stat.charAt(stat.lastIndexOf(')') + 2) != 'Z';
        } catch (IOException e) {
            return false;
        }
    }

    @Override
    public void close() {
        List<ProcessHandle> descendants = process.descendants().toList();
        process.destroyForcibly();
        descendants.forEach(ProcessHandle::destroyForcibly);
        server().ifPresent(p -> ProcessHandle.of(p.pid()).ifPresent(ProcessHandle::destroyForcibly));
    }
}
