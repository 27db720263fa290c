package dev.warden.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.marcnuri.helm.Helm;
import com.marcnuri.helm.TemplateCommand;
import dev.warden.deploy.PodChecks;
import dev.warden.testing.WardenProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every {@code sh} block of the README and docs/, so the commands there cannot drift from what they name:
 * warden's commands and options against its {@code --help}, {@code helm install} rendered by a real helm with
 * the same values, Maven profiles, kustomize overlays, Dockerfiles and scripts by their files. A block right
 * after a {@code <!-- runnable -->} line is run as written, in bash, with {@code warden} the packaged executable
 * and a home of its own holding a lilbee library.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class DocsCommandsIT {

    /** {@code warden PATH --help}, asked once per path for the whole class (each is a start of warden). */
    private final Map<String, String> helpByPath = new HashMap<>();

    private static final Pattern FENCE = Pattern.compile("^```(\\S*)\\s*$");
    private static final Pattern PLACEHOLDER = Pattern.compile("<[^<>]+>");

    /** A line of a block: where it is, and the command it holds (continuation lines joined). */
    record Line(String where, String command, boolean runnable) {
        @Override
        public String toString() {
            return where + ": " + command;
        }
    }

    /** A block to run: where it starts, its text. */
    record Block(String where, String text) {
        @Override
        public String toString() {
            return where;
        }
    }

    static List<Path> documents() throws IOException {
        List<Path> documents = new ArrayList<>(List.of(Path.of("README.md")));
        try (Stream<Path> docs = Files.list(Path.of("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(documents::add);
        }
        return documents;
    }

    static List<Block> blocks(boolean runnableOnly) throws IOException {
        List<Block> blocks = new ArrayList<>();
        for (Path document : documents()) {
            List<String> lines = Files.readAllLines(document);
            String previous = "";
            for (int i = 0; i < lines.size(); i++) {
                Matcher fence = FENCE.matcher(lines.get(i));
                if (!fence.matches()) {
                    if (!lines.get(i).isBlank()) {
                        previous = lines.get(i).strip();
                    }
                    continue;
                }
                int start = i;
                StringBuilder text = new StringBuilder();
                for (i++; i < lines.size() && !lines.get(i).startsWith("```"); i++) {
                    text.append(lines.get(i)).append('\n');
                }
                boolean runnable = previous.equals("<!-- runnable -->");
                if (fence.group(1).equals("sh") && (runnable || !runnableOnly)) {
                    blocks.add(new Block(document + ":" + (start + 1) + (runnable ? " (runnable)" : ""), text.toString()));
                }
                previous = "";
            }
        }
        return blocks;
    }

    static List<Line> commands() throws IOException {
        List<Line> commands = new ArrayList<>();
        for (Block block : blocks(false)) {
            StringBuilder joined = new StringBuilder();
            for (String line : block.text().split("\n")) {
                String stripped = line.strip();
                if (stripped.startsWith("#") || stripped.isEmpty()) {
                    continue;
                }
                if (stripped.endsWith("\\")) {
                    joined.append(stripped, 0, stripped.length() - 1).append(' ');
                    continue;
                }
                joined.append(stripped);
                for (String command : joined.toString().split(" && ")) {
                    commands.add(new Line(block.where(), command.strip(), block.where().endsWith("(runnable)")));
                }
                joined.setLength(0);
            }
        }
        return commands;
    }

    @Test
    void theDocsHaveCommandsAndRunnableBlocks() throws IOException {
        assertTrue(commands().size() >= 5, "found too few commands: " + commands());
        assertFalse(blocks(true).isEmpty(), "no block is marked runnable");
    }

    /** Every link to a file of the tree reaches it, and a {@code #heading} a heading of it (GitHub's anchors). */
    @Test
    void everyLinkReachesAFileAndItsHeading() throws IOException {
        Pattern link = Pattern.compile("\\]\\(([^)\\s]+)\\)");
        List<String> broken = new ArrayList<>();
        for (Path document : documents()) {
            Matcher m = link.matcher(Files.readString(document));
            while (m.find()) {
                String target = m.group(1);
                if (target.matches("[a-z]+:.*")) {
                    continue;
                }
                String[] parts = target.split("#", 2);
                Path file = parts[0].isEmpty() ? document : document.resolveSibling(parts[0]).normalize();
                if (!Files.exists(file)) {
                    broken.add(document + ": " + target + " (no such file)");
                } else if (parts.length == 2 && !anchors(file).contains(parts[1])) {
                    broken.add(document + ": " + target + " (no such heading in " + file + ")");
                }
            }
        }
        assertTrue(broken.isEmpty(), String.join("\n", broken));
    }

    /** GitHub's anchor of each heading: lower case, blanks to hyphens, punctuation but hyphens and underscores dropped. */
    private static List<String> anchors(Path markdown) throws IOException {
        return Files.readAllLines(markdown).stream().filter(l -> l.matches("#{1,6} .*"))
                .map(l -> l.replaceFirst("#+ ", "").toLowerCase(java.util.Locale.ROOT).replaceAll("[^\\p{L}\\p{N} _-]", "")
                        .replace(' ', '-'))
                .toList();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("commands")
    void eachCommandNamesWhatExists(Line line) throws Exception {
        List<String> words = words(line.command());
        String head = words.getFirst();
        int jar = words.indexOf("-jar");
        if (head.equals("warden")) {
            checkWarden(line, words.subList(1, words.size()));
        } else if (head.endsWith("/bin/java") && jar > 0) {
            assertEquals("target/quarkus-app/quarkus-run.jar", words.get(jar + 1), line + ": not the jar the build makes");
            checkWarden(line, words.subList(jar + 2, words.size()));
        } else if (head.equals("./mvnw")) {
            String pom = Files.readString(Path.of("pom.xml"));
            words.stream().filter(w -> w.startsWith("-P")).flatMap(w -> Stream.of(w.substring(2).split(",")))
                    .forEach(profile -> assertTrue(pom.contains("<id>" + profile + "</id>"), line + ": no Maven profile " + profile));
        } else if (head.equals("helm")) {
            checkHelm(line, words);
        } else if (head.equals("kubectl")) {
            assertTrue(words.size() == 4 && words.get(1).equals("apply") && words.get(2).equals("-k"),
                    line + ": only `kubectl apply -k DIR` is checked; add a check for this one");
            assertTrue(Files.isRegularFile(Path.of(words.get(3), "kustomization.yaml")), line + ": no kustomization in " + words.get(3));
        } else if (head.equals("podman")) {
            assertEquals("build", words.get(1), line + ": only `podman build` is checked; add a check for this one");
            int file = words.indexOf("-f");
            assertTrue(file > 0 && Files.isRegularFile(Path.of(words.get(file + 1))), line + ": no such Dockerfile");
            assertTrue(words.getLast().equals(".") || words.getLast().startsWith("target/"), line + ": a context in the tree");
        } else if (head.equals("cp")) {
            assertEquals(3, words.size(), line + ": only `cp FILE DIR` is checked; add a check for this one");
            assertTrue(Files.isRegularFile(Path.of(words.get(1))), line + ": no such file " + words.get(1));
            assertTrue(words.get(2).startsWith("target/"), line + ": copies into the build's target/ only");
        } else if (head.startsWith("src/")) {
            assertTrue(Files.isExecutable(Path.of(head)), line + ": no such script");
        } else if (!line.runnable() && !head.equals("mkdir")) {
            fail(line + ": a command this check does not know; add its check here, or mark the block runnable");
        }
    }

    /** {@code warden PATH... --OPTION...}: each command of the path exists and names each option in its help. */
    private void checkWarden(Line line, List<String> arguments) throws IOException, InterruptedException {
        List<String> path = new ArrayList<>();
        String help = help(path);
        int i = 0;
        for (; i < arguments.size() && !arguments.get(i).startsWith("-"); i++) {
            List<String> deeper = new ArrayList<>(path);
            deeper.add(arguments.get(i));
            String deeperHelp = help(deeper);
            if (deeperHelp == null) {
                break;
            }
            path = deeper;
            help = deeperHelp;
        }
        boolean optionsOnly = i == 0 && !arguments.isEmpty() && arguments.getFirst().startsWith("-");
        assertTrue(help != null && (!path.isEmpty() || optionsOnly), line + ": names no command of warden's");
        for (String argument : arguments.subList(i, arguments.size())) {
            if (argument.equals("--")) {
                break;
            }
            if (argument.startsWith("-") && !argument.startsWith("-D") && !argument.startsWith("-X")) {
                String option = argument.split("=", 2)[0];
                assertTrue(Pattern.compile("(^|[\\s,\\[])" + Pattern.quote(option) + "([=\\s,\\]]|$)", Pattern.MULTILINE).matcher(help).find(),
                        line + ": warden " + String.join(" ", path) + " has no option " + option);
            }
        }
    }

    /** {@code warden PATH --help}, once per path; null when PATH is not a command (its usage line does not name it). */
    private String help(List<String> path) throws IOException, InterruptedException {
        String key = String.join(" ", path);
        if (!helpByPath.containsKey(key)) {
            List<String> arguments = new ArrayList<>(path);
            arguments.add("--help");
            WardenProcess.Result result = WardenProcess.run(arguments.toArray(String[]::new));
            String usage = "Usage: warden" + (key.isEmpty() ? "" : " " + key) + " ";
            boolean named = result.exitCode() == 0 && result.stdout().contains(usage);
            helpByPath.put(key, named ? result.stdout() : null);
        }
        return helpByPath.get(key);
    }

    /** {@code helm install NAME CHART --set K=V...}: rendered by a real helm with the same values. */
    private static void checkHelm(Line line, List<String> words) {
        assertTrue(words.size() >= 4 && List.of("install", "template", "upgrade").contains(words.get(1)),
                line + ": only `helm install|template|upgrade NAME CHART` is checked; add a check for this one");
        Path chart = Path.of(words.get(3));
        assertTrue(Files.isRegularFile(chart.resolve("Chart.yaml")), line + ": no chart at " + chart);
        // An install or upgrade renders for the cluster's version; a template for the one it names, else the tests' cluster.
        TemplateCommand template = new Helm(chart).template().withName(words.get(2)).withKubeVersion(PodChecks.KUBE_VERSION);
        for (int i = 4; i < words.size(); i++) {
            if (words.get(i).equals("--kube-version")) {
                template.withKubeVersion(words.get(++i));
            } else if (words.get(i).equals("--set")) {
                String[] setting = PLACEHOLDER.matcher(words.get(++i)).replaceAll("example").split("=", 2);
                template.set(setting[0], setting[1]);
            } else {
                fail(line + ": only --set is checked; add a check for " + words.get(i));
            }
        }
        try {
            assertTrue(template.call().contains("kind: Deployment"), line + ": rendered no Deployment");
        } catch (RuntimeException e) {
            fail(line + ": helm refuses it: " + e.getMessage());
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("runnable")
    void eachRunnableBlockRunsAsWritten(Block block, @TempDir Path home) throws Exception {
        // A home with a library in it, as lilbee leaves one: its data dir and LanceDB's tables.
        Files.createDirectories(home.resolve(".local/share/lilbee/data/lancedb/chunks.lance"));
        Files.writeString(home.resolve(".local/share/lilbee/data/lancedb/chunks.lance/data.bin"), "rows");
        String warden = String.join(" ", WardenProcess.command().stream().map(DocsCommandsIT::quoted).toList());
        ProcessBuilder bash = new ProcessBuilder("bash", "-euo", "pipefail", "-c",
                "warden() { " + warden + " \"$@\"; }\n" + block.text()).directory(home.toFile());
        Map<String, String> env = bash.environment();
        env.keySet().removeIf(name -> name.startsWith("LILBEE_") || name.startsWith("XDG_") || name.startsWith("WARDEN_"));
        env.put("HOME", home.toString());
        Path log = WardenProcess.logFile("docs-block");
        Process process = bash.redirectErrorStream(true).redirectOutput(log.toFile()).start();
        process.getOutputStream().close();
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
            fail(block + " did not end within 60 s: " + Files.readString(log));
        }
        assertEquals(0, process.exitValue(), block + " failed:\n" + block.text() + "\n" + Files.readString(log));
    }

    static List<Block> runnable() throws IOException {
        return blocks(true);
    }

    /** Shell words: split on blanks outside quotes, quotes removed (no escapes inside them: the docs use none). */
    static List<String> words(String command) {
        List<String> words = new ArrayList<>();
        StringBuilder word = new StringBuilder();
        char quote = 0;
        boolean inWord = false;
        for (char c : command.toCharArray()) {
            if (quote != 0) {
                if (c == quote) {
                    quote = 0;
                } else {
                    word.append(c);
                }
            } else if (c == '\'' || c == '"') {
                quote = c;
                inWord = true;
            } else if (Character.isWhitespace(c)) {
                if (inWord) {
                    words.add(word.toString());
                    word.setLength(0);
                    inWord = false;
                }
            } else {
                word.append(c);
                inWord = true;
            }
        }
        if (inWord) {
            words.add(word.toString());
        }
        return words;
    }

    private static String quoted(String word) {
        return "'" + word.replace("'", "'\\''") + "'";
    }
}
