package dev.warden.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * lilbee's container as the manifests run it: the real supervisor ({@code helm/warden/files/lilbee-supervisor.py}) as
 * a separate process, connecting to a warden's switch socket, with lilbee's command after {@code --}: the stand-in
 * ({@code src/test/resources/gate/lilbee_stand_in.py}, which takes server.lock as filelock does and reports each take
 * in its state file) or the real {@code lilbee serve}. Closing it kills the supervisor and what it started, by pid.
 */
public final class Supervised implements AutoCloseable {

    public static final Path SUPERVISOR = Path.of("helm/warden/files/lilbee-supervisor.py").toAbsolutePath();
    public static final Path STAND_IN = Path.of("src/test/resources/gate/lilbee_stand_in.py").toAbsolutePath();

    private final Process process;
    private final Path log;
    private final Path state;

    /** The supervisor's own settings: its permit's longest and its grace, as the chart gives them. */
    public record Settings(Duration permit, Duration grace) {
        public static final Settings CHART = new Settings(Duration.ofSeconds(5), Duration.ofSeconds(2));

        List<String> options() {
            return List.of("--permit", seconds(permit), "--grace", seconds(grace));
        }

        /** Warden's settings for the same permit and grace, which its timings' inequalities count on, then {@code more}. */
        public List<String> wardenSettings(String... more) {
            List<String> settings = new ArrayList<>(List.of("-Dwarden.gate.supervisor.permit=" + permit.toMillis() + "ms",
                    "-Dwarden.gate.supervisor.grace=" + grace.toMillis() + "ms"));
            settings.addAll(List.of(more));
            return settings;
        }

        private static String seconds(Duration duration) {
            return Double.toString(duration.toMillis() / 1000.0);
        }
    }

    private Supervised(Process process, Path log, Path state) {
        this.process = process;
        this.log = log;
        this.state = state;
    }

    /** A supervisor running the stand-in on {@code serverLock}; its reports go to a state file of its own. */
    public static Supervised standIn(String name, Path socket, Path serverLock, Settings settings) throws IOException {
        return standIn(name, socket, serverLock, settings, List.of());
    }

    /** The same, with the stand-in's options: {@code ignore-term}, {@code linger=SECONDS} (its module says). */
    public static Supervised standIn(String name, Path socket, Path serverLock, Settings settings, List<String> options)
            throws IOException {
        Path state = WardenProcess.logFile(name + "-lilbee-state");
        Files.deleteIfExists(state);
        List<String> lilbee = new ArrayList<>(List.of(python(), STAND_IN.toString(), serverLock.toString(), state.toString()));
        lilbee.addAll(options);
        return start(name, socket, settings, lilbee, Map.of(), state);
    }

    /** A supervisor running {@code lilbee} (the real {@code lilbee serve}, say) with {@code env}. */
    public static Supervised command(String name, Path socket, Settings settings, List<String> lilbee, Map<String, String> env)
            throws IOException {
        return start(name, socket, settings, lilbee, env, null);
    }

    private static Supervised start(String name, Path socket, Settings settings, List<String> lilbee, Map<String, String> env,
            Path state) throws IOException {
        Peer.assumePython();
        // Warden and this supervisor run on this machine, in one mount namespace: no containers to tell them apart.
        List<String> command = new ArrayList<>(List.of(python(), SUPERVISOR.toString(), "--socket", socket.toString(),
                "--same-container-warden"));
        command.addAll(settings.options());
        command.add("--");
        command.addAll(lilbee);
        Path log = WardenProcess.logFile(name + "-supervisor");
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        builder.environment().putAll(env);
        return new Supervised(builder.start(), log, state);
    }

    /** The python the supervisor runs on: any python3, as in any lilbee image. */
    public static String python() {
        return "python3";
    }

    public long pid() {
        return process.pid();
    }

    public Process process() {
        return process;
    }

    /**
     * The stand-ins that took a server.lock, have not let it go, and are still alive, by pid: never more than one, when
     * all is well.
     */
    public List<Long> serving() {
        List<Long> alive = new ArrayList<>();
        List<String> lines = stateLines();
        for (String line : lines) {
            String[] words = line.split(" ");
            if (words[0].equals("serving") && !lines.contains("released " + words[1])
                    && ProcessHandle.of(Long.parseLong(words[1])).map(ProcessHandle::isAlive).orElse(false)) {
                alive.add(Long.parseLong(words[1]));
            }
        }
        return alive;
    }

    /** The stand-ins that let server.lock go on SIGTERM (told to linger) and are still alive, exiting. */
    public List<Long> lingering() {
        return stateLines().stream().filter(line -> line.startsWith("released ")).map(line -> Long.parseLong(line.split(" ")[1]))
                .filter(pid -> ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)).toList();
    }

    /** Every line the stand-ins wrote: {@code serving <pid> <dev> <ino>}, {@code term <pid>}, {@code gave-up <pid>}. */
    public List<String> stateLines() {
        try {
            return state == null || !Files.exists(state) ? List.of() : Files.readAllLines(state);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public String log() {
        try {
            return Files.exists(log) ? Files.readString(log) : "(no log)";
        } catch (IOException e) {
            return "(unreadable log: " + e + ")";
        }
    }

    /** SIGKILL to the supervisor and to every process it started, each waited for. */
    public void kill() {
        List<ProcessHandle> members = process.descendants().toList();
        process.destroyForcibly();
        for (ProcessHandle member : members) {
            member.destroyForcibly();
        }
        try {
            process.waitFor(30, TimeUnit.SECONDS);
            for (ProcessHandle member : members) {
                member.onExit().get(30, TimeUnit.SECONDS);
            }
        } catch (Exception e) {
            throw new IllegalStateException("a supervised process did not die", e);
        }
    }

    @Override
    public void close() {
        // Stand-ins outlive a supervisor killed first (a session of their own): kill them by the pids they reported too.
        List<Long> standIns = new ArrayList<>();
        stateLines().stream().map(line -> line.split(" ")).filter(w -> w.length > 1).forEach(w -> standIns.add(Long.parseLong(w[1])));
        kill();
        for (long pid : standIns) {
            ProcessHandle.of(pid).filter(p -> p.info().commandLine().orElse("").contains(state.toString()))
                    .ifPresent(ProcessHandle::destroyForcibly);
        }
    }
}
