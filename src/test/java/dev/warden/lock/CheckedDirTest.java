package dev.warden.lock;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.Swapper;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What a neighbour on the shared volume can swap in, and that none of it redirects or blocks warden. */
class CheckedDirTest {

    /** A guard against a hang, not a measure of speed: a blocking open would never return. */
    private static final Duration HANG = Duration.ofSeconds(20);

    @TempDir
    Path root;

    @Test
    void readsARegularFileUpToItsCapAndOneByteMore() throws Exception {
        Files.writeString(root.resolve("small"), "abc");
        Files.write(root.resolve("huge"), new byte[10_000]);
        try (CheckedDir dir = CheckedDir.open(root)) {
            assertArrayEquals("abc".getBytes(StandardCharsets.US_ASCII), dir.read("small", 100));
            assertEquals(101, dir.read("huge", 100).length);
        }
    }

    @Test
    void aFifoInPlaceOfAFileIsRefusedWithoutBlocking() throws Exception {
        Swapper.mkfifo(root.resolve("record.json"));
        try (CheckedDir dir = CheckedDir.open(root)) {
            FileSystemException e = assertTimeoutPreemptively(HANG,
                    () -> assertThrows(FileSystemException.class, () -> dir.read("record.json", 100)));
            assertEquals("is a FIFO, not a regular file", e.getReason());
        }
    }

    @Test
    void aLinkInPlaceOfAFileIsNeverFollowed() throws Exception {
        Path secret = Files.writeString(root.resolve("secret"), "token-1234");
        Path dirPath = Files.createDirectory(root.resolve("volume"));
        Files.createSymbolicLink(dirPath.resolve("record.json"), secret);
        try (CheckedDir dir = CheckedDir.open(dirPath)) {
            Posix.ErrnoException e = assertThrows(Posix.ErrnoException.class, () -> dir.read("record.json", 100));
            assertEquals(Errno.ELOOP, e.errno());
            assertFalse(e.getMessage().contains("token"), e.getMessage());
        }
    }

    @Test
    void aDirectoryOnTheWaySwappedForALinkIsRefused() throws Exception {
        Path elsewhere = Files.createDirectories(root.resolve("elsewhere/engine"));
        Files.writeString(elsewhere.resolve("x.lock"), "");
        Path volume = Files.createDirectory(root.resolve("volume"));
        // The path warden resolved at start was volume/engine; a neighbour makes "volume" a link since.
        Files.delete(volume);
        Files.createSymbolicLink(volume, root.resolve("elsewhere"));
        Posix.ErrnoException e = assertThrows(Posix.ErrnoException.class, () -> CheckedDir.open(volume.resolve("engine")));
        assertEquals(Errno.ELOOP, e.errno());
        // and the last component as a link is refused by the kernel itself
        assertEquals(Errno.ELOOP, assertThrows(Posix.ErrnoException.class, () -> CheckedDir.open(volume)).errno());
    }

    @Test
    void namesAndDeletesStayInTheDirectoryOpenedEvenIfItsPathIsSwappedAfterwards() throws Exception {
        Path users = Files.createDirectory(root.resolve("engine-users"));
        Files.writeString(users.resolve("dead.lock"), "");
        Path outside = Files.createDirectory(root.resolve("outside"));
        Files.writeString(outside.resolve("dead.lock"), "precious");
        try (CheckedDir dir = CheckedDir.open(users)) {
            Files.move(users, root.resolve("moved"));
            Files.createSymbolicLink(users, outside);
            assertEquals(List.of("dead.lock"), dir.names("*.lock"));
            assertTrue(dir.delete("dead.lock"));
        }
        assertEquals("precious", Files.readString(outside.resolve("dead.lock")));
        assertFalse(Files.exists(root.resolve("moved/dead.lock")));
    }

    @Test
    void replaceNeverWritesThroughALinkAndLeavesNoTemporaryFile() throws Exception {
        Path outside = Files.writeString(root.resolve("outside"), "precious");
        Path volume = Files.createDirectory(root.resolve("volume"));
        Files.createSymbolicLink(volume.resolve("owner.json"), outside);
        try (CheckedDir dir = CheckedDir.open(volume)) {
            dir.replace("owner.json", "{}".getBytes(StandardCharsets.US_ASCII));
        }
        assertEquals("precious", Files.readString(outside));
        assertFalse(Files.isSymbolicLink(volume.resolve("owner.json")));
        assertEquals("{}", Files.readString(volume.resolve("owner.json")));
        try (var files = Files.list(volume)) {
            assertEquals(List.of(volume.resolve("owner.json")), files.toList());
        }
    }

    @Test
    void deleteIfSameLeavesAFileSwappedInSince() throws Exception {
        Path file = Files.writeString(root.resolve("user.lock"), "");
        try (CheckedDir dir = CheckedDir.open(root)) {
            FileId before = dir.stat("user.lock").orElseThrow().id();
            // moved aside, not deleted, so the filesystem cannot give the newcomer the same inode
            Files.move(file, root.resolve("aside"));
            Files.writeString(file, "");
            assertFalse(dir.deleteIfSame("user.lock", before));
            assertTrue(Files.exists(file));
            assertTrue(dir.deleteIfSame("user.lock", dir.stat("user.lock").orElseThrow().id()));
        }
    }

    @Test
    void createDirectoriesMakesWhatIsMissingAndNothingThroughALinkSwappedIn() throws Exception {
        Path nested = root.resolve("volume/data/engine/engine-users");
        CheckedDir.createDirectories(nested);
        CheckedDir.createDirectories(nested);
        assertTrue(Files.isDirectory(nested));
        Path elsewhere = Files.createDirectory(root.resolve("elsewhere"));
        // warden resolved volume/data at start; a neighbour makes "data" a link since
        Path data = root.resolve("volume/data");
        Files.move(data, root.resolve("moved"));
        Files.createSymbolicLink(data, elsewhere);
        assertThrows(java.io.IOException.class, () -> CheckedDir.createDirectories(data.resolve("lancedb")));
        assertThrows(java.io.IOException.class, () -> CheckedDir.createDirectories(data));
        try (var files = Files.list(elsewhere)) {
            assertEquals(0, files.count(), "nothing created through the link");
        }
    }

    @Test
    void aNameIsNeverAPath() throws Exception {
        try (CheckedDir dir = CheckedDir.open(root)) {
            for (String bad : new String[] {"../x", "..", ".", "a/b", ""}) {
                assertThrows(IllegalArgumentException.class, () -> dir.read(bad, 1), bad);
            }
        }
    }
}
