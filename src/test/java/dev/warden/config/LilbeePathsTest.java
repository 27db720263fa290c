package dev.warden.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LilbeePathsTest {

    @TempDir
    Path dir;

    private static LilbeePaths at(Path root, Optional<Path> scope) {
        return new LilbeePaths(root, root.resolve("data"), root.resolve("data/lancedb"), scope, "test");
    }

    @Test
    void createdMakesTheDataAndScopeDirsThroughTheLinksThatAreThereAsLilbeeDoes() throws Exception {
        Path volume = Files.createDirectory(dir.resolve("volume"));
        Path root = Files.createSymbolicLink(dir.resolve("root"), volume);

        LilbeePaths created = at(root.resolve("lilbee"), Optional.of(root.resolve("scopes/a"))).created();

        Path real = volume.toRealPath();
        assertEquals(real.resolve("lilbee/data"), created.dataDir());
        assertEquals(Optional.of(real.resolve("scopes/a")), created.scopeDir());
        assertTrue(Files.isDirectory(real.resolve("lilbee/data"), java.nio.file.LinkOption.NOFOLLOW_LINKS));
        assertTrue(Files.isDirectory(real.resolve("scopes/a"), java.nio.file.LinkOption.NOFOLLOW_LINKS));
    }

    @Test
    void aDataDirThatIsALinkToADirectoryIsUsedWhereItPoints() throws Exception {
        Path root = Files.createDirectory(dir.resolve("root"));
        Path elsewhere = Files.createDirectory(dir.resolve("elsewhere"));
        Files.createSymbolicLink(root.resolve("data"), elsewhere);

        assertEquals(elsewhere.toRealPath(), at(root, Optional.empty()).created().dataDir());
    }

    @Test
    void aFileWhereTheDataDirShouldBeIsRefusedNamingIt() throws Exception {
        Path root = Files.createDirectory(dir.resolve("root"));
        Files.writeString(root.resolve("data"), "not a directory");

        UncheckedIOException refused = assertThrows(UncheckedIOException.class, () -> at(root, Optional.empty()).created());

        assertTrue(refused.getMessage().contains(root.toRealPath().resolve("data").toString()), refused.getMessage());
    }
}
