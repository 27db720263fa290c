package dev.warden.lock;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The mount a path is on, as {@code /proc/self/mountinfo} tells it: where it is mounted, from what, its filesystem type
 * and its options (the mount's and the superblock's together). Read to say at start when the volume's mount options
 * keep {@code flock(2)} locks on this node, where a pod on another node mounting the same volume would not see them.
 *
 * @param point where it is mounted
 * @param type the filesystem type ({@code nfs4}, {@code fuse.bindfs}...)
 * @param source what is mounted ({@code server:/export}, a device...)
 */
public record Mount(Path point, String type, String source, Set<String> options) {

    /** mountinfo is the kernel's and short; a cap all the same, as for every read. */
    private static final int MAX_MOUNTINFO = 4 * 1024 * 1024;

    /** The mount holding {@code path} in this process's mount namespace; empty where mountinfo cannot be read. */
    public static Optional<Mount> holding(Path path) {
        try (InputStream in = Files.newInputStream(Path.of("/proc/self/mountinfo"))) {
            return holding(path, new String(in.readNBytes(MAX_MOUNTINFO), StandardCharsets.UTF_8));
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /**
     * The mount holding {@code path} (absolute, normalized) in {@code mountinfo}: the one on the longest mount point at or
     * above it, the last listed where mounts are stacked on one point (the newest hides those under it).
     */
    static Optional<Mount> holding(Path path, String mountinfo) {
        Path absolute = path.toAbsolutePath().normalize();
        Mount best = null;
        for (String line : mountinfo.split("\n")) {
            Optional<Mount> mount = parse(line);
            if (mount.isPresent() && absolute.startsWith(mount.get().point())
                    && (best == null || mount.get().point().getNameCount() >= best.point().getNameCount())) {
                best = mount.get();
            }
        }
        return Optional.ofNullable(best);
    }

    /**
     * One line: {@code id parent major:minor root point options [optional fields] - type source super-options}; empty
     * when it is not one.
     */
    static Optional<Mount> parse(String line) {
        String[] fields = line.strip().split(" ");
        int dash = List.of(fields).indexOf("-");
        if (fields.length < 6 || dash < 6 || fields.length < dash + 3) {
            return Optional.empty();
        }
        Set<String> options = new LinkedHashSet<>(List.of(fields[5].split(",")));
        if (fields.length > dash + 3) {
            options.addAll(List.of(fields[dash + 3].split(",")));
        }
        try {
            return Optional.of(new Mount(Path.of(unescape(fields[4])), unescape(fields[dash + 1]), unescape(fields[dash + 2]),
                    Set.copyOf(options)));
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
    }

    /** mountinfo writes a space, a tab, a newline and a backslash in a field as octal escapes ({@code \040}). */
    private static String unescape(String field) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < field.length(); i++) {
            char c = field.charAt(i);
            if (c == '\\' && i + 3 < field.length() && field.substring(i + 1, i + 4).matches("[0-7]{3}")) {
                out.append((char) Integer.parseInt(field.substring(i + 1, i + 4), 8));
                i += 3;
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }

    /**
     * Why {@code flock(2)} locks taken on this mount may stay on this node, unseen by a pod on another node that mounts
     * the same volume, naming the mount and the fix; empty where its type and options say nothing of it. What it says
     * is known of each filesystem: NFS with {@code local_lock=flock|all} or {@code nolock}, Lustre with
     * {@code localflock}, SMB with {@code nobrl}, and FUSE, where it is up to each filesystem (two bindfs mounts of one
     * directory, on one node, do not see each other's locks).
     */
    public Optional<String> localLocks() {
        String where = type + " " + source + " at " + point;
        List<String> local = new ArrayList<>();
        if (type.startsWith("nfs")) {
            options.stream().filter(o -> o.equals("local_lock=flock") || o.equals("local_lock=all")).forEach(local::add);
            if (options.contains("nolock")) {
                local.add("nolock");
            }
            if (!local.isEmpty()) {
                return Optional.of(where + " is mounted with " + String.join(",", local) + ": flock(2) locks stay on this"
                        + " node, so a pod on another node mounting it would not see lilbee's or warden's locks. Mount it"
                        + " without " + String.join(" or ", local) + " (NFSv4, or v3 with its lock daemon), or keep every"
                        + " pod that mounts it on one node");
            }
        } else if (type.equals("lustre") && options.contains("localflock")) {
            return Optional.of(where + " is mounted with localflock: flock(2) locks stay on this node, so a pod on another"
                    + " node mounting it would not see lilbee's or warden's locks. Mount it with flock, or keep every pod"
                    + " that mounts it on one node");
        } else if ((type.equals("cifs") || type.equals("smb3")) && options.contains("nobrl")) {
            return Optional.of(where + " is mounted with nobrl: locks are not sent to the server, so a pod on another node"
                    + " mounting it would not see lilbee's or warden's locks. Mount it without nobrl, or keep every pod"
                    + " that mounts it on one node");
        } else if (type.equals("fuse") || type.startsWith("fuse.")) {
            return Optional.of(where + " is a FUSE filesystem: whether its flock(2) locks reach another mount of the same"
                    + " files (another pod's, on this node or another) is up to the filesystem, and many keep them to the"
                    + " mount that took them (bindfs does). Put the data dir on a filesystem whose locks every mount shares"
                    + " (NFS without local_lock, CephFS), unless this one's documentation says its locks are shared");
        }
        return Optional.empty();
    }
}
