package dev.warden.testing;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A fake engine as a real process: {@code setsid} gives it a process group of its own and
 * {@code exec -a} gives it the argv[0] warden checks, exactly as a real llama-swap would have.
 * Closing it kills it (and anything it spawned) by pid.
 */
public final class FakeEngine implements AutoCloseable {

    private final Process process;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final List<String> seen = java.util.Collections.synchronizedList(new ArrayList<>());

    private final String name;

    private FakeEngine(Process process, String name) {
        this.process = process;
        this.name = name;
        Thread.ofPlatform().daemon().start(() -> {
            try (BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = out.readLine()) != null) {
                    seen.add(line);
                    lines.add(line);
                }
            } catch (IOException e) {
                // the process ended
            }
        });
    }

    /** A fake llama-swap with the given arguments (see {@link FakeLlamaSwap}); returns once it is ready. */
    public static FakeEngine startLlamaSwap(String... args) throws IOException {
        FakeEngine engine = start("llama-swap", FakeLlamaSwap.class, args);
        engine.await("ready");
        return engine;
    }

    /** A standalone fake llama-server listening on {@code port}, in a session of its own. */
    public static FakeEngine startLlamaServer(int port) throws IOException {
        return start("llama-server", FakeLlamaServer.class, "--port", Integer.toString(port));
    }

    /**
     * A fake llama-server as llama-swap (v221+) starts one: a child in a process group of its own but
     * in llama-swap's session (perl, essential on Debian, does the setpgid that no util-linux tool does).
     */
    static FakeEngine startChildLlamaServer(int port) throws IOException {
        List<String> command = new ArrayList<>(List.of("perl", "-e", "setpgrp(0, 0); my $program = shift; exec { $program } @ARGV",
                java(), "llama-server"));
        command.addAll(jvm(FakeLlamaServer.class));
        command.addAll(List.of("--port", Integer.toString(port)));
        return new FakeEngine(new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start(), "llama-server");
    }

    /** The same program under another name, to play a stranger that inherited a recorded pid. */
    public static FakeEngine startStranger(String name) throws IOException {
        return startStranger(name, "--port", "0");
    }

    /** A stranger speaking llama-swap's HTTP with {@code args}, e.g. on a port a record names. */
    public static FakeEngine startStranger(String name, String... args) throws IOException {
        FakeEngine engine = start(name, FakeLlamaSwap.class, args);
        engine.await("ready");
        return engine;
    }

    private static FakeEngine start(String argv0, Class<?> main, String... args) throws IOException {
        List<String> command = new ArrayList<>(List.of("setsid", "bash", "-c", "exec -a \"$0\" \"$@\"", argv0, java()));
        command.addAll(jvm(main));
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        return new FakeEngine(process, argv0);
    }

    private static String java() {
        return ProcessHandle.current().info().command().orElse("java");
    }

    /** A small JVM running {@code main} from the test class path. */
    private static List<String> jvm(Class<?> main) {
        return List.of("-Xmx24m", "-XX:TieredStopAtLevel=1", "-Xshare:auto", "-XX:+UseSerialGC",
                "-cp", System.getProperty("java.class.path"), main.getName());
    }

    void waitUntilListening() {
        await("listening");
    }

    /** Waits until the fake has printed the line {@code expected} (at any time since it started). */
    public void await(String expected) {
        long deadline = System.nanoTime() + Await.PATIENCE.toNanos();
        try {
            while (System.nanoTime() < deadline) {
                if (seen.contains(expected)) {
                    return;
                }
                if (lines.poll(50, TimeUnit.MILLISECONDS) == null && !process.isAlive() && !seen.contains(expected)) {
                    break;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        throw new AssertionError("the fake " + name + " (pid " + process.pid() + ") never printed '" + expected
                + "'; it printed " + seen);
    }

    /** Every line printed so far. */
    public List<String> printed() {
        return List.copyOf(seen);
    }

    public long pid() {
        return process.pid();
    }

    /** The process's start, as lilbee records {@code created_at} (epoch seconds). */
    public double createdAt() {
        return createdAt(pid());
    }

    /**
     * {@code pid}'s start as lilbee's psutil computes {@code created_at}: /proc/stat's btime as of now
     * plus the start ticks. Not the JDK's {@code startInstant()}, which keeps the btime of this JVM's
     * first ask: after a clock step that is no longer what lilbee would write.
     */
    public static double createdAt(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
            String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            long ticks = Long.parseLong(fields[22 - 3]);
            long btime = Files.readAllLines(Path.of("/proc/stat")).stream().filter(l -> l.startsWith("btime "))
                    .map(l -> Long.parseLong(l.substring(6).trim())).findFirst().orElseThrow();
            return btime + ticks / 100.0;
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    public boolean alive() {
        return process.isAlive();
    }

    /** Waits for the exit and returns its code (143 for SIGTERM, 137 for SIGKILL). */
    public int exitCode(Duration timeout) throws InterruptedException {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("the fake engine " + pid() + " is still running");
        }
        return process.exitValue();
    }

    /** Writes lilbee's record for this engine into {@code engineDir} and returns its path. */
    public Path writeRecord(Path engineDir, String group, int proxyPort, List<Integer> memberPorts) throws IOException {
        Files.createDirectories(engineDir);
        Path record = engineDir.resolve("llama-swap.state." + group + "." + ProcessHandle.current().pid() + ".json");
        Files.writeString(record, String.format(java.util.Locale.ROOT,
                "{\"pid\": %d, \"pgid\": %d, \"created_at\": %.3f, \"name\": \"llama-swap\", \"member_ports\": %s,"
                        + " \"proxy_port\": %d, \"launches\": 1}",
                pid(), pid(), createdAt(), memberPorts, proxyPort));
        return record;
    }

    public void kill() throws InterruptedException {
        for (ProcessHandle child : process.descendants().toList()) {
            child.destroyForcibly();
        }
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
    }

    @Override
    public void close() throws InterruptedException {
        kill();
    }

    public static int freePort() throws IOException {
        return LoopbackPorts.next();
    }
}
