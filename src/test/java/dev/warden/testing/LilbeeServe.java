package dev.warden.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The real {@code lilbee serve} (a full install from PyPI, made by .ci/run; its python named by
 * {@code warden.interop.lilbee-python}) as a separate process on a loopback port, with a home of
 * its own: no variable of this machine's reaches it but those a test names, and it downloads
 * nothing. Closing it kills it and every process it started, by pid.
 */
public final class LilbeeServe implements AutoCloseable {

    /** Every variable that moves lilbee's files: a test gives each it wants, the rest are unset. */
    private static final List<String> LILBEE_VARIABLES = List.of("LILBEE_DATA", "LILBEE_DATA_ROOT", "LILBEE_DATA_DIR",
            "LILBEE_LANCEDB_DIR", "LILBEE_EXCLUSIVE_SCOPE", "LILBEE_ENGINE_DIR", "LILBEE_SKIP_TOML_CONFIG",
            "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME");

    private final Process process;
    private final Path log;

    private LilbeeServe(Process process, Path log) {
        this.process = process;
        this.log = log;
    }

    /** The {@code lilbee} command of the interop virtualenv; skips the test, saying why, without one. */
    public static Path command(String name) {
        String python = System.getProperty("warden.interop.lilbee-python", "");
        if (python.isEmpty()) {
            String why = "no lilbee: run with -Pinterop -Dinterop.lilbee-python=<a python with lilbee>, as .ci/run does"
                    + System.getProperty("warden.interop.lilbee-missing", "");
            System.err.println("SKIPPED: " + why);
            org.junit.jupiter.api.Assumptions.abort(why);
        }
        return Path.of(python).resolveSibling(name);
    }

    /**
     * The environment lilbee and warden share in a test: {@code home} as HOME, every lilbee
     * variable unset (empty values remove a variable, as {@link WardenProcess#run} reads them), no
     * model downloads, then {@code given}.
     */
    public static Map<String, String> environment(Path home, Map<String, String> given) {
        Map<String, String> env = new java.util.HashMap<>();
        LILBEE_VARIABLES.forEach(v -> env.put(v, ""));
        env.put("HOME", home.toString());
        env.put("HF_HUB_OFFLINE", "1");
        env.put("NO_COLOR", "1");
        env.putAll(given);
        return env;
    }

    /** {@code lilbee serve --port 0 ARGS} in {@code cwd}, with {@link #environment(Path, Map)}. */
    public static LilbeeServe start(Path cwd, Map<String, String> env, String... args) throws IOException {
        List<String> command = new ArrayList<>(List.of(command("lilbee").toString(), "serve", "--port", "0"));
        command.addAll(List.of(args));
        Path log = WardenProcess.logFile("lilbee-serve");
        return new LilbeeServe(builder(command, cwd, env).redirectErrorStream(true).redirectOutput(log.toFile()).start(), log);
    }

    /** Runs a lilbee command ({@code reset --yes}, ...) to its end; returns its exit code and output. */
    public static WardenProcess.Result run(Path cwd, Map<String, String> env, String... args) throws IOException, InterruptedException {
        return runUnder(List.of(), cwd, env, args);
    }

    /** The same, started by {@code launcher}, a program that execs the command it is given ({@link NoLocking}'s). */
    public static WardenProcess.Result runUnder(List<String> launcher, Path cwd, Map<String, String> env, String... args)
            throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(launcher);
        command.add(command("lilbee").toString());
        command.addAll(List.of(args));
        Path out = WardenProcess.logFile("lilbee-run");
        ProcessBuilder builder = builder(command, cwd, env).redirectErrorStream(true).redirectOutput(out.toFile());
        Process process = builder.start();
        process.getOutputStream().close();
        if (!process.waitFor(120, TimeUnit.SECONDS)) {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
            throw new AssertionError("lilbee " + String.join(" ", args) + " did not end in 120 s: " + Files.readString(out));
        }
        return new WardenProcess.Result(process.exitValue(), Files.readString(out), "");
    }

    private static ProcessBuilder builder(List<String> command, Path cwd, Map<String, String> env) {
        return WardenProcess.withEnvironment(new ProcessBuilder(command).directory(cwd.toFile()), env);
    }

    public long pid() {
        return process.pid();
    }

    public Process process() {
        return process;
    }

    /**
     * The {@code server.lock} this lilbee holds, as the kernel sees it: a descriptor of the process
     * open on a file of that name, and a flock of the process on that file in /proc/locks.
     */
    public Optional<Path> heldServerLock() {
        return heldLock("server.lock");
    }

    /** A lock file named {@code name} that this lilbee holds a flock on. */
    public Optional<Path> heldLock(String name) {
        try (var fds = Files.list(Path.of("/proc", Long.toString(pid()), "fd"))) {
            for (Path fd : fds.toList()) {
                Path target;
                try {
                    target = Files.readSymbolicLink(fd);
                } catch (IOException e) {
                    continue;
                }
                if (target.getFileName() != null && target.getFileName().toString().equals(name)
                        && KernelLocks.flockHolders(target).contains(pid())) {
                    return Optional.of(target);
                }
            }
        } catch (IOException | java.io.UncheckedIOException e) {
            return Optional.empty();
        }
        return Optional.empty();
    }

    /** Waits until lilbee holds its server lock (it serves from then on); returns the lock file. */
    public Path awaitServing() {
        Path[] held = new Path[1];
        try {
            Await.until("lilbee serve holds its server.lock", () -> {
                if (!process.isAlive()) {
                    throw new AssertionError("lilbee serve exited with " + process.exitValue() + ":\n" + log());
                }
                held[0] = heldServerLock().orElse(null);
                return held[0] != null;
            });
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "\nlilbee's log:\n" + log(), e);
        }
        return held[0];
    }

    /** Waits for lilbee to exit by itself; returns its exit code. */
    public int awaitExit(Duration timeout) throws InterruptedException {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("lilbee serve still runs after " + timeout.toSeconds() + " s:\n" + log());
        }
        return process.exitValue();
    }

    public String log() {
        try {
            return Files.readString(log);
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    /** SIGKILL to lilbee and whatever it started, and wait until the kernel has reaped it (its locks are gone). */
    public void kill() throws InterruptedException {
        process.descendants().forEach(ProcessHandle::destroyForcibly);
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }

    @Override
    public void close() throws InterruptedException {
        kill();
    }
}
