package dev.warden.config;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/**
 * Whether a path warden guards lies on a container's own filesystem rather than on a mounted volume.
 * There nothing else sees it: not llama-swap's container, not lilbee's, not another pod. warden would
 * hold a lock no one else can ask about and say ready, so it says why that is probably not meant.
 */
public final class ContainerVolume {

    private ContainerVolume() {
    }

    /** Whether this process runs in a container: podman's and docker's marker files, or Kubernetes's environment. */
    public static boolean inContainer(Map<String, String> env) {
        return Files.exists(Path.of("/run/.containerenv")) || Files.exists(Path.of("/.dockerenv"))
                || env.containsKey("KUBERNETES_SERVICE_HOST");
    }

    /**
     * A warning when {@code path} (or, if it does not exist yet, its nearest existing ancestor) is on the
     * same filesystem as {@code root}, the container's own root: no volume is mounted on its way.
     */
    public static Optional<String> warning(Path path, Path root) {
        Path existing = path.toAbsolutePath();
        while (existing != null && !Files.exists(existing)) {
            existing = existing.getParent();
        }
        try {
            if (existing == null || !Files.getAttribute(existing, "unix:dev").equals(Files.getAttribute(root, "unix:dev"))) {
                return Optional.empty();
            }
        } catch (IOException | UnsupportedOperationException e) {
            return Optional.empty();
        }
        return Optional.of("The data root " + path + " is on this container's own filesystem, not on a volume: no other"
                + " container or pod sees its lock or its engine dir, so warden holds a lock nobody else can ask about."
                + " Mount the shared volume there, or point WARDEN_DATA_ROOT (warden.data-root) at where it is mounted.");
    }
}
