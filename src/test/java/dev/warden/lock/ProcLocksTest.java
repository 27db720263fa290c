package dev.warden.lock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.Peer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ProcLocksTest {

    @TempDir
    Path dir;

    @Test
    void theHolderOfAFlockHeldByAnotherProcessIsFound() throws Exception {
        Path file = dir.resolve("server.lock");
        try (Peer holder = Peer.flockHolder(file)) {
            FileId id = new NativePosix().statAt(Posix.AT_FDCWD, file.toString()).id();
            assertEquals(OptionalLong.of(holder.pid()), new ProcLocks().holderOf(id));
        }
    }

    @Test
    void waitersAndOtherFilesAreNotTakenForTheHolder() throws Exception {
        Path table = dir.resolve("locks");
        Files.writeString(table, String.join("\n",
                "1: FLOCK  ADVISORY  WRITE 100 fd:01:555 0 EOF",
                "1: -> FLOCK  ADVISORY  WRITE 200 00:2d:1234 0 EOF",
                "2: FLOCK  ADVISORY  WRITE 300 00:2d:1234 0 EOF",
                "3: POSIX  ADVISORY  WRITE 400 00:2d:99 0 EOF"));
        // st_dev 0x2d is major 0, minor 0x2d.
        assertEquals(OptionalLong.of(300), new ProcLocks(table).holderOf(new FileId(0x2d, 1234)));
        assertEquals(OptionalLong.empty(), new ProcLocks(table).holderOf(new FileId(0x2d, 4321)));
    }

    @Test
    void anUnreadableTableMeansAnUnknownHolder() {
        assertTrue(new ProcLocks(dir.resolve("absent")).holderOf(new FileId(1, 2)).isEmpty());
    }

    @Test
    void largeDeviceNumbersAreDecodedAsGlibcDoes() {
        // makedev(259, 3) in glibc's encoding
        long dev = ((259L & 0xfffL) << 8) | ((259L & ~0xfffL) << 32) | (3L & 0xffL) | ((3L & ~0xffL) << 12);
        FileId id = new FileId(dev, 7);
        assertEquals(259, id.major());
        assertEquals(3, id.minor());
    }
}
