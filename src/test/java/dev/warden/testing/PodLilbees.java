package dev.warden.testing;

import dev.warden.lock.FileId;
import dev.warden.lock.ProcLocks;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Predicate;

/**
 * Which pods of a {@link KubeletCluster} have a {@code lilbee serve} holding {@code server.lock}, as this machine's
 * kernel shows it (every node shares it): what a pod's kubelet reports lags, calls a container running while it
 * only waits to become lilbee, and cannot tell a lilbee that serves from one exiting after it let its lock go.
 * A process belongs to a pod when its cgroup path names the pod's UID; it holds server.lock when the lock table
 * ({@link ProcLocks}) gives it the lock on the file one of its descriptors names {@code .../server.lock}
 * (on isolated nodes each has its own file: two holders are two lilbees serving one data dir).
 */
public final class PodLilbees {

    private PodLilbees() {
    }

    /** The pods, of those {@code byUid} names (UID to pod name), whose lilbee serve holds server.lock now. */
    public static List<String> serving(Map<String, String> byUid) {
        Set<String> found = new TreeSet<>();
        holders().values().forEach(cgroup -> byUid.forEach((uid, name) -> {
            if (inPod(cgroup, uid)) {
                found.add(name);
            }
        }));
        return new ArrayList<>(found);
    }

    /** The lilbee serve of the pod with this UID that holds server.lock now, if one does. */
    public static OptionalLong holderIn(String podUid) {
        return holders().entrySet().stream().filter(e -> inPod(e.getValue(), podUid)).mapToLong(Map.Entry::getKey).findFirst();
    }

    /** Every {@code lilbee serve} process of the pod with this UID, holding a lock or not. */
    public static List<Long> processesIn(String podUid) {
        return processes(process -> true).entrySet().stream().filter(e -> inPod(e.getValue(), podUid))
                .map(Map.Entry::getKey).sorted().toList();
    }

    private static boolean inPod(String cgroup, String uid) {
        return cgroup.contains(uid) || cgroup.contains(uid.replace('-', '_'));
    }

    /** Every lilbee serve holding server.lock now, with its cgroup. */
    private static Map<Long, String> holders() {
        ProcLocks table = new ProcLocks();
        return processes(process -> holdsServerLock(process, Long.parseLong(process.getFileName().toString()), table));
    }

    /** Every lilbee serve whose /proc entry passes {@code also}, with its cgroup. */
    private static Map<Long, String> processes(Predicate<Path> also) {
        Map<Long, String> found = new HashMap<>();
        try (DirectoryStream<Path> proc = Files.newDirectoryStream(Path.of("/proc"),
                p -> p.getFileName().toString().chars().allMatch(Character::isDigit))) {
            for (Path process : proc) {
                if (lilbeeServe(read(process.resolve("cmdline")), read(process.resolve("comm")).strip()) && also.test(process)) {
                    found.put(Long.parseLong(process.getFileName().toString()), read(process.resolve("cgroup")));
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot list /proc", e);
        }
        return found;
    }

    /**
     * {@code lilbee serve}, run as a script by its Python ({@code python .../bin/lilbee serve}) or directly, or in the
     * process lilbee's supervisor prepared ({@code python lilbee-supervisor.py --prepared ... -- lilbee serve}), once it
     * runs lilbee's command: it names itself {@code lilbee} then ({@code lilbee-prepared} while it waits).
     */
    static boolean lilbeeServe(String cmdline, String comm) {
        List<String> argv = List.of(cmdline.split("\0"));
        int command = argv.contains("--prepared") && argv.contains("--") ? argv.indexOf("--") + 1 : 0;
        if (command > 0 && !comm.equals("lilbee")) {
            return false;
        }
        for (int i = command; i + 1 < argv.size() && i < command + 2; i++) {
            if ((argv.get(i).equals("lilbee") || argv.get(i).endsWith("/lilbee")) && argv.get(i + 1).equals("serve")) {
                return true;
            }
        }
        return false;
    }

    /** Whether a descriptor of the process names a server.lock whose lock the lock table gives to the process. */
    private static boolean holdsServerLock(Path process, long pid, ProcLocks table) {
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(process.resolve("fd"))) {
            for (Path fd : fds) {
                String target = Files.readSymbolicLink(fd).toString();
                if (target.endsWith("/server.lock") || target.endsWith("/server.lock (deleted)")) {
                    Map<String, Object> id = Files.readAttributes(fd, "unix:dev,ino");
                    if (table.holderOf(new FileId((Long) id.get("dev"), (Long) id.get("ino"))).equals(OptionalLong.of(pid))) {
                        return true;
                    }
                }
            }
        } catch (IOException | UnsupportedOperationException e) {
            // gone meanwhile, or a descriptor closed between the listing and the look
        }
        return false;
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
