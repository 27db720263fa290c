package dev.warden.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Predicate;

/**
 * The processes of some pods of a {@link KubeletCluster} as this machine's kernel shows them (every node shares
 * it): what a pod's kubelet reports can lag or, for a container that runs a wrapper, say running before the
 * program does; the kernel cannot. A process belongs to a pod when its cgroup path names the pod's UID.
 */
public final class PodProcesses {

    /** {@code lilbee serve}, run as a script by its Python ({@code python .../bin/lilbee serve}) or directly. */
    public static final Predicate<List<String>> LILBEE_SERVE = argv -> {
        for (int i = 0; i + 1 < argv.size() && i < 2; i++) {
            String program = argv.get(i);
            if ((program.equals("lilbee") || program.endsWith("/lilbee")) && argv.get(i + 1).equals("serve")) {
                return true;
            }
        }
        return false;
    };

    private PodProcesses() {
    }

    /** The pods, of those {@code byUid} names (UID to pod name), with a process {@code program} picks by its argument vector. */
    public static List<String> running(Map<String, String> byUid, Predicate<List<String>> program) {
        Set<String> found = new TreeSet<>();
        try (DirectoryStream<Path> proc = Files.newDirectoryStream(Path.of("/proc"), p -> p.getFileName().toString().chars()
                .allMatch(Character::isDigit))) {
            for (Path process : proc) {
                List<String> argv = argv(process);
                if (argv.isEmpty() || !program.test(argv)) {
                    continue;
                }
                String cgroup = read(process.resolve("cgroup"));
                byUid.forEach((uid, name) -> {
                    if (cgroup.contains(uid) || cgroup.contains(uid.replace('-', '_'))) {
                        found.add(name);
                    }
                });
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot list /proc", e);
        }
        return new ArrayList<>(found);
    }

    private static List<String> argv(Path process) {
        String line = read(process.resolve("cmdline"));
        return line.isEmpty() ? List.of() : Arrays.asList(line.split("\0"));
    }

    /** What the file holds; empty for a process gone meanwhile. */
    private static String read(Path file) {
        try {
            return new String(Files.readAllBytes(file), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "";
        }
    }
}
