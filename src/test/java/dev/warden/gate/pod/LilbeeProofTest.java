package dev.warden.gate.pod;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.gate.GateWorld;
import dev.warden.lock.FileId;
import dev.warden.lock.ProcFs;
import dev.warden.lock.ProcLocks;
import dev.warden.lock.SystemProcFs;
import dev.warden.testing.Peer;
import dev.warden.time.MonotonicClock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The proof that the process lilbee's supervisor names holds server.lock, against real locks of every kind the kernel
 * has: only an exclusive flock through its own descriptor counts; and which files it has open at all.
 */
class LilbeeProofTest {

    @TempDir
    Path dir;

    private Path lock;
    private final SystemProcFs processes = new SystemProcFs();

    @BeforeEach
    void lockFile() throws Exception {
        dir = dir.toRealPath();
        lock = Files.writeString(dir.resolve("server.lock"), "");
    }

    private FileId id() {
        return ProcLocks.idOf(lock).orElseThrow();
    }

    private LilbeeProof proof() {
        return new LilbeeProof(processes, MonotonicClock.SYSTEM);
    }

    private GateWorld.Holding look(Peer process, Set<FileId> wanted) {
        return proof().look(process.pid(), processes.startTicks(process.pid()).orElseThrow(), wanted);
    }

    private Set<FileId> holds(Peer process, Set<FileId> wanted) {
        return look(process, wanted).locked();
    }

    @Test
    void anExclusiveFlockThroughItsOwnDescriptorIsProof() throws Exception {
        try (Peer lilbee = Peer.pythonLock(lock, "flock-exclusive")) {
            assertEquals(Set.of(id()), holds(lilbee, Set.of(id())));
        }
    }

    /**
     * Anyone who can read server.lock can take these; none of them keeps lilbee out, so none proves lilbee. Each is a
     * descriptor of the file all the same: open, as a lilbee whose lock another process unlocked has it.
     */
    @Test
    void posixOfdAndSharedLocksNeverCountWhateverTheCommandLineSays() throws Exception {
        for (String kind : List.of("posix-read", "ofd-read", "flock-shared")) {
            try (Peer decoy = Peer.pythonLock(lock, kind, "/opt/lilbee/bin/lilbee", "serve")) {
                assertEquals(new GateWorld.Holding(Set.of(), Set.of(id())), look(decoy, Set.of(id())), kind + " is no proof");
            }
        }
    }

    /** A file replaced at the path: the lock on the old one is told apart from the file now there. */
    @Test
    void aLockOnAFileNoLongerAtThePathIsThatFilesNotThePaths() throws Exception {
        try (Peer lilbee = Peer.pythonLock(lock, "flock-exclusive")) {
            FileId old = id();
            Files.move(lock, dir.resolve("server.lock.old"));
            Files.writeString(lock, "");
            assertEquals(Set.of(old), holds(lilbee, Set.of(id(), old)));
            assertEquals(Set.of(), holds(lilbee, Set.of(id())), "nothing holds the new file");
        }
    }

    @Test
    void aHolderThatLetsGoIsDroppedAtTheNextLook() throws Exception {
        Peer lilbee = Peer.pythonLock(lock, "flock-exclusive");
        long ticks = processes.startTicks(lilbee.pid()).orElseThrow();
        LilbeeProof proof = proof();
        assertEquals(new GateWorld.Holding(Set.of(id()), Set.of(id())), proof.look(lilbee.pid(), ticks, Set.of(id())));
        lilbee.kill();
        assertEquals(GateWorld.Holding.NOTHING, proof.look(lilbee.pid(), ticks, Set.of(id())));
        assertFalse(proof.alive(lilbee.pid(), ticks));
    }

    /** The supervisor named another instance (a pid reused since): nothing it holds proves the one named. */
    @Test
    void anotherInstanceUnderThePidProvesNothing() throws Exception {
        try (Peer lilbee = Peer.pythonLock(lock, "flock-exclusive")) {
            long ticks = processes.startTicks(lilbee.pid()).orElseThrow();
            assertTrue(proof().alive(lilbee.pid(), ticks));
            assertEquals(GateWorld.Holding.NOTHING, proof().look(lilbee.pid(), ticks + 1, Set.of(id())));
        }
    }

    /** A lilbee must descend from the supervisor that names it: a process of the pod it did not start proves nothing. */
    @Test
    void onlyADescendantOfTheSupervisorIsItsLilbee() throws Exception {
        try (Peer lilbee = Peer.pythonLock(lock, "flock-exclusive")) {
            assertTrue(proof().startedBy(lilbee.pid(), ProcessHandle.current().pid()), "this test started it");
            assertFalse(proof().startedBy(ProcessHandle.current().pid(), lilbee.pid()), "it did not start this test");
            assertFalse(proof().startedBy(lilbee.pid(), lilbee.pid()), "no process descends from itself");
        }
    }

    @Test
    void lockLinesAreReadAsTheKernelWritesThem() {
        FileId file = new FileId(0x2d, 1234); // major 0, minor 0x2d, as a tmpfs or overlay has
        assertTrue(ProcFs.isExclusiveFlock("\t1: FLOCK  ADVISORY  WRITE 4242 00:2d:1234 0 EOF", file));
        assertFalse(ProcFs.isExclusiveFlock("\t1: FLOCK  ADVISORY  READ 4242 00:2d:1234 0 EOF", file));
        assertFalse(ProcFs.isExclusiveFlock("\t1: POSIX  ADVISORY  WRITE 4242 00:2d:1234 0 EOF", file));
        assertFalse(ProcFs.isExclusiveFlock("\t1: OFDLCK ADVISORY  WRITE -1 00:2d:1234 0 EOF", file));
        assertFalse(ProcFs.isExclusiveFlock("\t1: LEASE  ACTIVE    READ 4242 00:2d:1234 0 EOF", file));
        assertFalse(ProcFs.isExclusiveFlock("\t1: -> FLOCK  ADVISORY  WRITE 4243 00:2d:1234 0 EOF", file));
        assertFalse(ProcFs.isExclusiveFlock("\t1: FLOCK  ADVISORY  WRITE 4242 00:2d:1235 0 EOF", file),
                "another inode");
        assertFalse(ProcFs.isExclusiveFlock("garbage", file));
    }
}
