package dev.warden.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * Writes docs/BENCHMARKS.md: the machine, the date and the command, then one section per figure.
 * Sections land in target/bench/ first, so a run of one benchmark keeps the others' last results.
 */
final class Report {

    private static final Path SECTIONS = Path.of("target", "bench");
    private static final Path DOC = Path.of("docs", "BENCHMARKS.md");

    /** Figure 10 after 9, not after 1: by the leading number, then by name (1b after 1). */
    private static final java.util.Comparator<Path> BY_FIGURE = java.util.Comparator
            .comparingInt((Path p) -> Integer.parseInt(p.getFileName().toString().replaceAll("^(\\d*).*", "0$1")))
            .thenComparing(p -> p.getFileName().toString());

    private Report() {
    }

    static void section(String title, String intro, List<String> header, List<String> rows) throws IOException {
        if (dev.warden.testing.WardenProcess.nativeExecutable()) {
            // Beside the JVM's figure, not over it: "2. Reaper reaction" becomes "2n. Reaper reaction, the native executable".
            title = title.replaceFirst("^(\\d+[a-z]?)\\. (.*)$", "$1n. $2, the native executable");
            intro = "`warden` as the native executable (`-Pnative`: target/warden-*-runner) where the figure above runs the jar. "
                    + intro;
        }
        keepCommittedFigures();
        List<String> lines = new ArrayList<>(List.of("## " + title, "", intro, ""));
        lines.addAll(header);
        lines.addAll(rows);
        lines.add("");
        Files.write(file(title), lines);
        write();
    }

    private static Path file(String title) {
        return SECTIONS.resolve(title.replaceAll("[^A-Za-z0-9]+", "-") + ".md");
    }

    /**
     * A run of one benchmark in a fresh clone (no target/bench/ yet) keeps the others' figures: each figure of the
     * committed docs/BENCHMARKS.md becomes a section here first, so the doc is rewritten with every figure, this one new.
     */
    private static void keepCommittedFigures() throws IOException {
        if (Files.isDirectory(SECTIONS)) {
            return;
        }
        Files.createDirectories(SECTIONS);
        if (!Files.exists(DOC)) {
            return;
        }
        List<String> section = null;
        for (String line : Files.readAllLines(DOC)) {
            if (line.startsWith("## ")) {
                save(section);
                // A figure's heading starts with its number; the analysis (appended from its own file) does not.
                section = line.matches("## \\d+[a-z]?\\. .*") ? new ArrayList<>() : null;
            }
            if (section != null) {
                section.add(line);
            }
        }
        save(section);
    }

    private static void save(List<String> section) throws IOException {
        if (section != null) {
            Files.write(file(section.getFirst().substring("## ".length())), section);
        }
    }

    private static void write() throws IOException {
        List<String> doc = new ArrayList<>(List.of(
                "# warden benchmarks",
                "",
                "Written by `./mvnw verify -Pbench -Dinterop.python=<a python with filelock>` (see docs/development.md).",
                "Numbers, not assertions: the default test suite never times anything.",
                "",
                "- date: " + LocalDate.now(),
                "- machine: " + machine(),
                "- java: " + Runtime.version() + ", " + System.getProperty("java.vm.name"),
                ""));
        try (Stream<Path> sections = Files.list(SECTIONS)) {
            for (Path section : sections.filter(p -> p.toString().endsWith(".md")).sorted(BY_FIGURE).toList()) {
                doc.addAll(Files.readAllLines(section));
            }
        }
        Path analysis = Path.of("docs", "BENCHMARKS-analysis.md");
        if (Files.exists(analysis)) {
            doc.addAll(Files.readAllLines(analysis));
        }
        Files.createDirectories(DOC.getParent());
        Files.write(DOC, doc);
    }

    private static String machine() {
        String cpu = "?";
        String memory = "?";
        try {
            cpu = Files.readAllLines(Path.of("/proc/cpuinfo")).stream().filter(l -> l.startsWith("model name"))
                    .findFirst().map(l -> l.substring(l.indexOf(':') + 1).trim()).orElse("?");
            memory = Files.readAllLines(Path.of("/proc/meminfo")).stream().filter(l -> l.startsWith("MemTotal"))
                    .findFirst().map(l -> l.replaceAll("\\s+", " ")).orElse("?");
        } catch (IOException e) {
            // best effort
        }
        String kernel = "?";
        try {
            kernel = Files.readString(Path.of("/proc/sys/kernel/osrelease")).trim();
        } catch (IOException e) {
            // best effort
        }
        return Runtime.getRuntime().availableProcessors() + " cores (" + cpu + "), " + memory + ", Linux " + kernel;
    }
}
