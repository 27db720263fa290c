package dev.warden.hold;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ScopeOwnerFileTest {

    @TempDir
    Path dir;

    private final ScopeOwnerFile owners = new ScopeOwnerFile(new ObjectMapper());

    @Test
    void theOwnerFileCarriesTheDataDirAndThePidAsLilbeeAndTheObsidianPluginRead() throws Exception {
        Path file = dir.resolve("server.scope.owner.json");
        owners.write(file, Path.of("/data/a"), 4242);
        var json = new ObjectMapper().readTree(file.toFile());
        assertEquals("/data/a", json.get("data_dir").asText());
        assertEquals(4242, json.get("pid").asLong());
        assertEquals(new ScopeOwner(Optional.of("/data/a"), OptionalLong.of(4242)), owners.read(file));
    }

    @Test
    void writingLeavesNoTemporaryFileBehind() throws Exception {
        owners.write(dir.resolve("server.scope.owner.json"), Path.of("/data/a"), 1);
        owners.write(dir.resolve("server.scope.owner.json"), Path.of("/data/b"), 1);
        try (Stream<Path> files = Files.list(dir)) {
            assertEquals(1, files.count());
        }
        assertEquals(Optional.of("/data/b"), owners.read(dir.resolve("server.scope.owner.json")).dataDir());
    }

    @Test
    void aLinkPlantedAtAnyNameTheWriteMightUseIsNeverWrittenThrough() throws Exception {
        // Finding 1: the temporary name was built from the pid, and opened following links.
        Path outside = Files.writeString(dir.resolve("outside"), "precious");
        Path scope = Files.createDirectory(dir.resolve("scope"));
        Path owner = scope.resolve("server.scope.owner.json");
        long pid = ProcessHandle.current().pid();
        Files.createSymbolicLink(scope.resolve(".server.scope.owner.json." + pid + ".tmp"), outside);
        owners.write(owner, Path.of("/data/a"), pid);
        Files.delete(owner);
        Files.createSymbolicLink(owner, outside);
        owners.write(owner, Path.of("/data/a"), pid);
        assertEquals("precious", Files.readString(outside));
        assertEquals(Optional.of("/data/a"), owners.read(owner).dataDir());
        assertFalse(Files.isSymbolicLink(owner));
    }

    @Test
    void aFifoOrALinkInPlaceOfTheOwnerFileMeansUnknownWithoutBlocking() throws Exception {
        Path owner = dir.resolve("server.scope.owner.json");
        dev.warden.testing.Swapper.mkfifo(owner);
        assertEquals(ScopeOwner.UNKNOWN, org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
                java.time.Duration.ofSeconds(20), () -> owners.read(owner)));
        Files.delete(owner);
        Path secret = Files.writeString(dir.resolve("secret"), "{\"data_dir\": \"/secret\"}");
        Files.createSymbolicLink(owner, secret);
        assertEquals(ScopeOwner.UNKNOWN, owners.read(owner));
    }

    @Test
    void aMissingOwnerFileMeansAnUnknownHolder() {
        assertEquals(ScopeOwner.UNKNOWN, owners.read(dir.resolve("server.scope.owner.json")));
    }

    @Test
    void aCorruptOwnerFileMeansAnUnknownHolderNeverAnError() throws Exception {
        Path file = dir.resolve("server.scope.owner.json");
        for (String content : new String[] {"", "{", "[]", "null", "{\"pid\": 3}", "{\"data_dir\": 7}", "\u0000\u0001"}) {
            Files.writeString(file, content);
            assertFalse(owners.read(file).known(), "content " + content);
        }
    }

    @Test
    void lilbeesOwnerFileWithoutAPidNamesTheDataDir() throws Exception {
        Path file = dir.resolve("server.scope.owner.json");
        Files.writeString(file, "{\"data_dir\": \"/data/x\"}");
        ScopeOwner owner = owners.read(file);
        assertEquals(Optional.of("/data/x"), owner.dataDir());
        assertTrue(owner.pid().isEmpty());
        assertEquals("the server of /data/x", owner.describe());
    }

    @Test
    void aPidThatIsNotAPositiveIntegerIsIgnored() throws Exception {
        Path file = dir.resolve("server.scope.owner.json");
        for (String pid : new String[] {"\"12\"", "-4", "0", "1.5", "null"}) {
            Files.writeString(file, "{\"data_dir\": \"/d\", \"pid\": " + pid + "}");
            assertEquals(new ScopeOwner(Optional.of("/d"), OptionalLong.empty()), owners.read(file), "pid " + pid);
        }
    }

    @Test
    void aHugeOwnerFileIsNotReadWhole() throws Exception {
        Path file = dir.resolve("server.scope.owner.json");
        Files.writeString(file, "{\"data_dir\": \"" + "x".repeat(2 * 1024 * 1024) + "\"}");
        assertFalse(owners.read(file).known());
    }

    @Test
    void aDirectoryInPlaceOfTheOwnerFileMeansUnknown() throws Exception {
        Path file = Files.createDirectory(dir.resolve("server.scope.owner.json"));
        assertFalse(owners.read(file).known());
    }
}
