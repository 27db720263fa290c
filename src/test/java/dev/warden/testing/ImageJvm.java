package dev.warden.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** warden's JVM as its container image runs it, and what it costs in memory. */
public final class ImageJvm {

    private static final Path DOCKERFILE = Path.of("src", "main", "docker", "Dockerfile.jvm");

    private ImageJvm() {
    }

    /** The JVM flags the container image starts warden with: read from its Dockerfile, so they cannot drift. */
    public static List<String> flags() throws IOException {
        Matcher opts = Pattern.compile("JAVA_OPTS=\"([^\"]*)\"").matcher(Files.readString(DOCKERFILE));
        if (!opts.find()) {
            throw new AssertionError("no JAVA_OPTS in " + DOCKERFILE);
        }
        return List.of(opts.group(1).trim().split("\\s+"));
    }

    /** A process's resident memory now, in KiB (VmRSS). */
    public static long rssKb(long pid) throws IOException {
        return statusKb(pid, "VmRSS");
    }

    /** One of a process's memory figures in {@code /proc/<pid>/status} now ({@code VmRSS}, {@code RssFile}...), in KiB. */
    public static long statusKb(long pid, String field) throws IOException {
        return Files.readAllLines(Path.of("/proc", Long.toString(pid), "status")).stream()
                .filter(l -> l.startsWith(field + ":")).map(l -> Long.parseLong(l.replaceAll("\\D", "")))
                .findFirst().orElseThrow(() -> new IOException("no " + field + " for pid " + pid));
    }
}
