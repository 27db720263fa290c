package dev.warden.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** The podman command line, for the tests and benchmarks of the container image. */
public final class Podman {

    private Podman() {
    }

    public record Run(int exitCode, String output) {
    }

    /** {@code podman ARGS} to its end (at most three minutes), stdout and stderr together, stripped. */
    public static Run run(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("podman"));
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!process.waitFor(180, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError(String.join(" ", command) + " did not finish: " + out);
        }
        return new Run(process.exitValue(), out.strip());
    }

    /** {@code podman ARGS}, which must succeed; its output. */
    public static String ok(String... args) throws IOException, InterruptedException {
        Run run = run(args);
        if (run.exitCode() != 0) {
            throw new AssertionError("podman " + String.join(" ", args) + " failed (" + run.exitCode() + "):\n" + run.output());
        }
        return run.output();
    }

    /** The image a test or benchmark runs, from {@code -Dcontainer.NAME=...}; empty when not given. */
    public static String image(String name) {
        return System.getProperty("warden.container." + name, "");
    }
}
