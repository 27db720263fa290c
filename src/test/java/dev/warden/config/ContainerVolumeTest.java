package dev.warden.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ContainerVolumeTest {

    @TempDir
    Path dir;

    @Test
    void aDataRootOnTheRootsFilesystemIsNamedWithTheFix() {
        // The temp dir and its not-yet-made child are on one filesystem: as a data root with no volume mounted.
        Optional<String> warning = ContainerVolume.warning(dir.resolve("lilbee/data"), dir);
        assertTrue(warning.isPresent());
        assertTrue(warning.get().startsWith("The data root " + dir.resolve("lilbee/data") + " is on this container's own filesystem"),
                warning.get());
        assertTrue(warning.get().contains("Mount the shared volume there"), warning.get());
    }

    @Test
    void aDataRootOnAnotherFilesystemIsFine() {
        // /proc is a filesystem of its own on every Linux machine, as a mounted volume is.
        assertEquals(Optional.empty(), ContainerVolume.warning(Path.of("/proc/self"), dir));
    }

    @Test
    void kubernetesEnvironmentMeansAContainer() {
        assertTrue(ContainerVolume.inContainer(Map.of("KUBERNETES_SERVICE_HOST", "10.96.0.1")));
    }
}
