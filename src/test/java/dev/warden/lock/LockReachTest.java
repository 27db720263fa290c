package dev.warden.lock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.Swapper;
import dev.warden.time.Moment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two holders of one lock whose locks do not meet (two mounts, here two keepers that each believe they took it), through
 * the real heartbeat file: the later one stands by and says why, the first keeps serving, and nothing a neighbour puts at
 * the heartbeat's path blocks either or is quoted.
 */
class LockReachTest {

    private static final Duration BEAT = Duration.ofMillis(250);
    private static final Duration HANG = Duration.ofSeconds(20);

    @TempDir
    Path dir;

    private final AtomicLong nanos = new AtomicLong(1_000_000_000L);

    /** A holder on a node of its own: one file here, two lock domains as two nodes or two mounts make them. */
    private LockReach reach(String pod) {
        return new LockReach(NativePosix.shared(), dir.resolve("server.lock"), pod + ":0001", pod, "boot-" + pod, BEAT,
                Duration.ZERO, () -> new Moment(nanos.get()));
    }

    private FileId lockFile() throws Exception {
        return new FileId((Long) Files.getAttribute(dir, "unix:dev"), 1);
    }

    private void advance(Duration by) {
        nanos.addAndGet(by.toNanos());
    }

    @Test
    void theLaterHolderStandsByWhileTheFirstBeatsAndServesOnceItLetsGo() throws Exception {
        LockReach first = reach("pod-a");
        LockReach later = reach("pod-b");
        List<LockReach.Verdict> heard = new ArrayList<>();
        later.onChange(heard::add);
        assertInstanceOf(LockReach.Verdict.Proven.class, first.taken(lockFile()));
        assertTrue(Files.readString(dir.resolve("server.lock.heartbeat")).startsWith("warden-heartbeat 1 holder=pod-a:0001"));
        assertInstanceOf(LockReach.Verdict.Proving.class, later.taken(lockFile()));
        advance(BEAT);
        first.keep(lockFile());
        LockReach.Verdict.Shared shared = assertInstanceOf(LockReach.Verdict.Shared.class, later.keep(lockFile()));
        assertTrue(shared.why().contains(dir.resolve("server.lock").toString()), shared.why());
        assertTrue(shared.why().contains("do not reach"), shared.why());
        assertFalse(shared.why().contains("pod-a"), "the record's words are never quoted: " + shared.why());
        assertTrue(later.shared());
        advance(BEAT);
        LockReach.Verdict firstNow = first.keep(lockFile());
        assertInstanceOf(LockReach.Verdict.Proven.class, firstNow);
        for (int i = 0; i < 8; i++) {
            advance(BEAT);
            first.keep(lockFile());
            assertInstanceOf(LockReach.Verdict.Shared.class, later.keep(lockFile()), "still beating at beat " + i);
        }
        first.letGo(lockFile());
        advance(BEAT);
        assertInstanceOf(LockReach.Verdict.Proving.class, later.keep(lockFile()), "a record saying released is no proof: silence is");
        advance(Duration.ofSeconds(1));
        assertInstanceOf(LockReach.Verdict.Proven.class, later.keep(lockFile()));
        assertEquals(4, heard.size(), "proving, shared, proving, proven: " + heard);
    }

    @Test
    void aHolderPausedPastTheWindowStandsByForTheOneThatTookOver() throws Exception {
        LockReach first = reach("pod-a");
        LockReach later = reach("pod-b");
        first.taken(lockFile());
        later.taken(lockFile());
        advance(Duration.ofSeconds(1));
        assertInstanceOf(LockReach.Verdict.Proven.class, later.keep(lockFile()), "the first was silent for the window");
        advance(BEAT);
        assertInstanceOf(LockReach.Verdict.Shared.class, first.keep(lockFile()), "back from its pause, the first finds it was replaced");
        advance(BEAT);
        LockReach.Verdict.Proven serving = assertInstanceOf(LockReach.Verdict.Proven.class, later.keep(lockFile()));
        assertFalse(serving.overlapped(), "the first wrote nothing over it");
    }

    @Test
    void aLockTakenInTheRecordHoldersOwnDomainServesAtOnce() throws Exception {
        reach("pod-a").taken(lockFile());
        LockReach sameNode = new LockReach(NativePosix.shared(), dir.resolve("server.lock"), "pod-b:0002", "pod-b",
                "boot-pod-a", BEAT, Duration.ZERO, () -> new Moment(nanos.get()));
        assertInstanceOf(LockReach.Verdict.Proven.class, sameNode.taken(lockFile()),
                "one kernel and one device: the kernel gave the lock, so that holder let it go");
        LockReach.Verdict.Proving proving = assertInstanceOf(LockReach.Verdict.Proving.class, reach("pod-c").taken(lockFile()));
        assertTrue(proving.why().contains("another mount or node"), proving.why());
    }

    @Test
    void whatANeighbourPutsAtTheHeartbeatsPathNeitherBlocksNorDecides() throws Exception {
        Path path = dir.resolve("server.lock.heartbeat");
        Swapper.mkfifo(path);
        LockReach holder = reach("pod-a");
        assertTimeoutPreemptively(HANG, () -> assertInstanceOf(LockReach.Verdict.Proving.class, holder.taken(lockFile()),
                "a holder of another node may be behind what cannot be read: waited out"));
        advance(Duration.ofSeconds(1));
        assertTimeoutPreemptively(HANG, () -> assertInstanceOf(LockReach.Verdict.Proven.class, holder.keep(lockFile())));
        assertTrue(Files.isRegularFile(path, java.nio.file.LinkOption.NOFOLLOW_LINKS), "the beat replaced the FIFO");
        Files.delete(path);
        Path elsewhere = Files.writeString(dir.resolve("elsewhere"), "keep");
        Files.createSymbolicLink(path, elsewhere);
        advance(BEAT);
        assertInstanceOf(LockReach.Verdict.Proven.class, holder.keep(lockFile()), "the holder ignores what is not a record");
        assertEquals("keep", Files.readString(elsewhere), "a link at the path is replaced, never written through");
        Files.delete(path);
        Files.write(path, ("warden-heartbeat 1 holder=x:1 pod=x domain=boot-x:1 generation=9 beat=1 state=held\n"
                + "x".repeat(100_000)).getBytes(StandardCharsets.US_ASCII));
        LockReach.Verdict.Proving oversized = assertInstanceOf(LockReach.Verdict.Proving.class, reach("pod-b").taken(lockFile()));
        assertFalse(oversized.why().contains("boot-x"), "nothing of the file is quoted: " + oversized.why());
    }

    @Test
    void aHeartbeatThatCannotBeWrittenIsNoBeat() throws Exception {
        Files.createDirectory(dir.resolve("server.lock.heartbeat"));
        LockReach holder = reach("pod-a");
        assertInstanceOf(LockReach.Verdict.Proving.class, holder.taken(lockFile()));
        advance(Duration.ofSeconds(1));
        assertInstanceOf(LockReach.Verdict.Proven.class, holder.keep(lockFile()), "a directory that stays is waited out");
        for (int i = 0; i < 8; i++) {
            advance(BEAT);
            assertInstanceOf(LockReach.Verdict.Proven.class, holder.keep(lockFile()), "the holder serves on");
        }
        // It could not beat for all that time: to a holder of another node it fell silent, and may have been taken over.
        Files.delete(dir.resolve("server.lock.heartbeat"));
        Files.write(dir.resolve("server.lock.heartbeat"), new Heartbeat("pod-b:0002", "pod-b", "boot-pod-b:1", 2, 0, false)
                .bytes());
        advance(BEAT);
        assertInstanceOf(LockReach.Verdict.Shared.class, holder.keep(lockFile()),
                "silent past the window, it stands by for the holder that took over");
    }
}
