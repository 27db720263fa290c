package dev.warden.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** Another program run to its end: what the deployment tests run helm, kubectl, kubecheck and podman with. */
public final class Command {

    private Command() {
    }

    /** Its exit code, and its stdout and stderr together. */
    public record Run(int exitCode, String output) {
    }

    /** Runs {@code command} with {@code stdin} (null: none) fed to it; fails after three minutes. */
    public static Run run(String stdin, List<String> command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        try (var in = process.getOutputStream()) {
            if (stdin != null) {
                in.write(stdin.getBytes(StandardCharsets.UTF_8));
            }
        }
        // Read beside the wait: a command that never ends never closes its output either.
        FutureTask<String> out = new FutureTask<>(() -> new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
        Thread.ofVirtual().start(out);
        if (!process.waitFor(180, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
            throw new AssertionError(String.join(" ", command) + " did not finish in 180 s: " + output(out));
        }
        return new Run(process.exitValue(), output(out));
    }

    private static String output(FutureTask<String> out) throws InterruptedException {
        try {
            return out.get(10, TimeUnit.SECONDS);
        } catch (ExecutionException | TimeoutException e) {
            return "(output unreadable: " + e + ")";
        }
    }

    /** The same, and it must exit 0: its output. */
    public static String ok(String stdin, List<String> command) throws IOException, InterruptedException {
        Run run = run(stdin, command);
        if (run.exitCode() != 0) {
            throw new AssertionError(String.join(" ", command) + " failed (" + run.exitCode() + "):\n" + run.output());
        }
        return run.output();
    }
}
