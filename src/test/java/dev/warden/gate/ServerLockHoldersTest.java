package dev.warden.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.engine.ProcessTable;
import dev.warden.lock.FileId;
import dev.warden.lock.ProcLocks;
import dev.warden.testing.Peer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The proof that a process is this pod's lilbee, against real locks of every kind the kernel has: only
 * an exclusive flock through the holder's own descriptor counts. A "pod" here is a directory of links
 * to chosen {@code /proc/<pid>} entries, so a test decides which processes it sees.
 */
class ServerLockHoldersTest {

    @TempDir
    Path dir;

    private Path lock;
    private long device;

    @BeforeEach
    void lockFile() throws Exception {
        dir = dir.toRealPath();
        lock = Files.writeString(dir.resolve("server.lock"), "");
        device = ProcLocks.idOf(dir).orElseThrow().device();
    }

    private Path pod(Peer... members) throws Exception {
        Path pod = Files.createTempDirectory(dir, "proc");
        for (Peer member : members) {
            Files.createSymbolicLink(pod.resolve(Long.toString(member.pid())), Path.of("/proc", Long.toString(member.pid())));
        }
        return pod;
    }

    private ServerLockHolders.Look look(Path pod, Set<FileId> files) {
        ServerLockHolders holders = new ServerLockHolders(new ProcessTable(), pod);
        return holders.look(files, "server.lock", device);
    }

    private FileId id() {
        return ProcLocks.idOf(lock).orElseThrow();
    }

    @Test
    void anExclusiveFlockThroughItsOwnDescriptorIsProof() throws Exception {
        try (Peer lilbee = Peer.pythonLock(lock, "flock-exclusive")) {
            ServerLockHolders.Look look = look(pod(lilbee), Set.of(id()));
            assertTrue(look.complete());
            assertEquals(List.of(lilbee.pid()), look.holders().stream().map(ServerLockHolders.Holder::pid).toList());
            assertEquals(id(), look.holders().getFirst().file());
        }
    }

    /** Anyone who can read server.lock can take these; none of them keeps lilbee out, so none proves lilbee. */
    @Test
    void posixOfdAndSharedLocksNeverCountWhateverTheCommandLineSays() throws Exception {
        for (String kind : List.of("posix-read", "ofd-read", "flock-shared")) {
            try (Peer decoy = Peer.pythonLock(lock, kind, "/opt/lilbee/bin/lilbee", "serve")) {
                ServerLockHolders.Look look = look(pod(decoy), Set.of(id()));
                assertTrue(look.complete());
                assertEquals(List.of(), look.holders(), kind + " is no proof");
            }
        }
    }

    @Test
    void everyHolderIsFoundNotTheFirstLine() throws Exception {
        try (Peer decoy = Peer.pythonLock(lock, "posix-read", "lilbee", "serve");
                Peer lilbee = Peer.pythonLock(lock, "flock-exclusive")) {
            ServerLockHolders.Look look = look(pod(decoy, lilbee), Set.of(id()));
            assertEquals(List.of(lilbee.pid()), look.holders().stream().map(ServerLockHolders.Holder::pid).toList());
        }
    }

    /** A warden restarted after a reset knows no inode: a deleted file of the lock's name on the data dir's device. */
    @Test
    void aDeletedServerLockIsFoundByItsNameOnTheDataDirsDevice() throws Exception {
        try (Peer lilbee = Peer.pythonLock(lock, "flock-exclusive")) {
            FileId old = id();
            Files.delete(lock);
            Files.writeString(lock, "");
            ServerLockHolders.Look look = look(pod(lilbee), Set.of(id()));
            assertEquals(List.of(old), look.holders().stream().map(ServerLockHolders.Holder::file).toList());
            assertEquals(List.of(), look(pod(lilbee), Set.of(id())).holders().stream()
                    .filter(h -> h.file().equals(id())).toList(), "nothing holds the new file");
            ServerLockHolders elsewhere = new ServerLockHolders(new ProcessTable(), pod(lilbee));
            assertEquals(List.of(), elsewhere.look(Set.of(id()), "server.lock", device + 1).holders(),
                    "a deleted file of that name on another device is not the data dir's");
        }
    }

    @Test
    void aProvenHolderThatLetsGoIsDroppedAtTheNextLook() throws Exception {
        Peer lilbee = Peer.pythonLock(lock, "flock-exclusive");
        ServerLockHolders holders = new ServerLockHolders(new ProcessTable(), pod(lilbee));
        assertEquals(1, holders.look(Set.of(id()), "server.lock", device).holders().size());
        lilbee.kill();
        assertEquals(List.of(), holders.look(Set.of(id()), "server.lock", device).holders());
    }

    @Test
    void aProcessWardenCannotSeeIsNoHolder() throws Exception {
        try (Peer lilbee = Peer.pythonLock(lock, "flock-exclusive")) {
            ServerLockHolders.Look look = look(Files.createTempDirectory(dir, "empty"), Set.of(id()));
            assertTrue(look.complete(), "a pass over an empty pod has ended");
            assertFalse(look.holders().stream().anyMatch(h -> h.pid() == lilbee.pid()));
        }
    }

    @Test
    void lockLinesAreReadAsTheKernelWritesThem() {
        FileId file = new FileId(0x2d, 1234); // major 0, minor 0x2d, as a tmpfs or overlay has
        assertTrue(ServerLockHolders.isExclusiveFlock("\t1: FLOCK  ADVISORY  WRITE 4242 00:2d:1234 0 EOF", file));
        assertFalse(ServerLockHolders.isExclusiveFlock("\t1: FLOCK  ADVISORY  READ 4242 00:2d:1234 0 EOF", file));
        assertFalse(ServerLockHolders.isExclusiveFlock("\t1: POSIX  ADVISORY  WRITE 4242 00:2d:1234 0 EOF", file));
        assertFalse(ServerLockHolders.isExclusiveFlock("\t1: OFDLCK ADVISORY  WRITE -1 00:2d:1234 0 EOF", file));
        assertFalse(ServerLockHolders.isExclusiveFlock("\t1: LEASE  ACTIVE    READ 4242 00:2d:1234 0 EOF", file));
        assertFalse(ServerLockHolders.isExclusiveFlock("\t1: -> FLOCK  ADVISORY  WRITE 4243 00:2d:1234 0 EOF", file));
        assertFalse(ServerLockHolders.isExclusiveFlock("\t1: FLOCK  ADVISORY  WRITE 4242 00:2d:1235 0 EOF", file),
                "another inode");
        assertFalse(ServerLockHolders.isExclusiveFlock("garbage", file));
    }
}
