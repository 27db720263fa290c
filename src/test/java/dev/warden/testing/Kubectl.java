package dev.warden.testing;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** kubectl (from the PATH) against one cluster, named by its admin kubeconfig. */
public record Kubectl(Path kubeconfig) {

    /** kubectl with {@code stdin} (may be null) fed to it. */
    public Command.Run run(String stdin, String... args) throws IOException, InterruptedException {
        return Command.run(stdin, command(args));
    }

    /** kubectl, which must succeed: its output. */
    public String ok(String stdin, String... args) throws IOException, InterruptedException {
        return Command.ok(stdin, command(args));
    }

    /** kubectl's output when it succeeds; empty when it fails or cannot run: for waiting on a condition. */
    public Optional<String> poll(String... args) {
        try {
            Command.Run run = run(null, args);
            return run.exitCode() == 0 ? Optional.of(run.output()) : Optional.empty();
        } catch (IOException e) {
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }

    private List<String> command(String... args) {
        List<String> command = new ArrayList<>(List.of("kubectl", "--kubeconfig=" + kubeconfig));
        command.addAll(List.of(args));
        return command;
    }
}
