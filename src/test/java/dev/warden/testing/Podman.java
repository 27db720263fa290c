package dev.warden.testing;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/** The podman command line, for the tests and benchmarks of the container image. */
public final class Podman {

    private Podman() {
    }

    /** {@code podman ARGS} to its end, stdout and stderr together, stripped. */
    public static Command.Run run(String... args) throws IOException, InterruptedException {
        Command.Run run = Command.run(null, command(args));
        return new Command.Run(run.exitCode(), run.output().strip());
    }

    /** {@code podman ARGS}, which must succeed; its output, stripped. */
    public static String ok(String... args) throws IOException, InterruptedException {
        return Command.ok(null, command(args)).strip();
    }

    private static List<String> command(String... args) {
        List<String> command = new ArrayList<>(List.of("podman"));
        command.addAll(List.of(args));
        return command;
    }

    /** Whether {@code image} is warden's native image (its {@code dev.warden.flavour} label), not the JVM's. */
    public static boolean nativeImage(String image) throws IOException, InterruptedException {
        String flavour = ok("image", "inspect", "--format", "{{index .Config.Labels \"dev.warden.flavour\"}}", image);
        if (!flavour.equals("native") && !flavour.equals("jvm")) {
            throw new AssertionError(image + " is labelled neither dev.warden.flavour=jvm nor =native: not built from src/main/docker");
        }
        return flavour.equals("native");
    }

    /** The image a test or benchmark runs, from {@code -Dcontainer.NAME=...}; empty when not given. */
    public static String image(String name) {
        return System.getProperty("warden.container." + name, "");
    }
}
