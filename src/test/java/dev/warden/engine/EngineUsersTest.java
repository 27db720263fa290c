package dev.warden.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.lock.Errno;
import dev.warden.lock.FileLocker;
import dev.warden.lock.HeldLock;
import dev.warden.lock.LockException;
import dev.warden.lock.NativePosix;
import dev.warden.lock.Posix;
import dev.warden.testing.DelegatingPosix;
import dev.warden.testing.Peer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EngineUsersTest {

    @TempDir
    Path root;

    private final FileLocker locker = new FileLocker(new NativePosix());
    private final EngineUsers users = new EngineUsers(locker);

    @Test
    void aUserLockHeldByAnotherProcessIsALiveUser() throws Exception {
        EngineDir dir = new EngineDir(root);
        Files.createDirectories(dir.usersDir());
        try (Peer user = Peer.flockHolder(dir.userLock("lilbee-1"))) {
            assertTrue(users.anyLive(dir));
            assertEquals(List.of("lilbee-1"), users.liveIds(dir));
            assertTrue(Files.exists(dir.userLock("lilbee-1")));
        }
    }

    @Test
    void aUserLockNobodyHoldsBelongsToADeadUserAndIsRemoved() throws Exception {
        EngineDir dir = new EngineDir(root);
        Files.createDirectories(dir.usersDir());
        Peer user = Peer.flockHolder(dir.userLock("killed"));
        user.kill();
        assertEquals(List.of(), users.liveIds(dir));
        assertTrue(Files.exists(dir.userLock("killed")), "looking removes nothing");
        assertFalse(users.anyLive(dir));
        assertFalse(Files.exists(dir.userLock("killed")), "the reaper removes a dead user's lock");
    }

    @Test
    void keepWarmMarkersAreNotUsers() throws Exception {
        EngineDir dir = new EngineDir(root);
        Files.createDirectories(dir.usersDir());
        Files.createFile(dir.usersDir().resolve("0123456789abcdef.keep-warm"));
        assertFalse(users.anyLive(dir));
        assertEquals(1, dir.keepWarmMarkers().size());
    }

    @Test
    void joiningMakesWardenAUserOtherProcessesSee() throws Exception {
        EngineDir dir = new EngineDir(root);
        try (AutoCloseable held = users.join(dir, "warden-exec")) {
            assertFalse(Peer.flockCanTake(dir.userLock("warden-exec")));
            LockException taken = assertThrows(LockException.class, () -> users.join(dir, "warden-exec", Duration.ofMillis(200)));
            assertTrue(taken.getMessage().contains("pick another engine user id"), taken.getMessage());
        }
        assertFalse(Files.exists(dir.userLock("warden-exec")), "a user that leaves removes its lock file");
        assertThrows(IllegalArgumentException.class, () -> users.join(dir, "../escape"));
    }

    /**
     * A reaper (this one or lilbee's) takes each user lock for an instant to see whether its user
     * lives; a join that asks in that instant waits for it, as lilbee's hold does, and holds the
     * lock once the look is over. The look is a second open description of the file, here held
     * for 300 ms.
     */
    @Test
    void aJoinWaitsOutAReapersLookAtItsLock() throws Exception {
        EngineDir dir = new EngineDir(root);
        Files.createDirectories(dir.usersDir());
        HeldLock look = locker.tryLock(dir.userLock("exec-1")).orElseThrow();
        Thread.ofPlatform().start(() -> {
            try {
                Thread.sleep(300);
                look.close();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        try (AutoCloseable held = users.join(dir, "exec-1")) {
            assertFalse(look.isHeld(), "the join waited for the look to end");
            assertFalse(Peer.flockCanTake(dir.userLock("exec-1")), "and holds the lock itself now");
        }
    }

    /**
     * A user lock of another UID that warden may not even read (0600 under umask 077) may be held: it
     * counts as a live user, is kept, and is named in the log once, not every pass.
     */
    @Test
    void aUserLockWardenMayNotOpenIsALiveUserNamedOnce() throws Exception {
        EngineDir dir = new EngineDir(root);
        Files.createDirectories(dir.usersDir());
        Path lock = Files.createFile(dir.userLock("other-uid"));
        Posix denied = new DelegatingPosix(new NativePosix()) {
            @Override
            public int openAt(int dirFd, String name, Open how) throws ErrnoException {
                if (name.equals("other-uid.lock")) {
                    throw new ErrnoException("open(" + name + ")", Errno.EACCES, "injected");
                }
                return super.openAt(dirFd, name, how);
            }
        };
        EngineUsers users = new EngineUsers(new FileLocker(denied));
        List<String> warnings = new CopyOnWriteArrayList<>();
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord record) {
                if (record.getLevel().intValue() >= Level.WARNING.intValue()) {
                    warnings.add(record.getMessage());
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        Logger logger = Logger.getLogger(EngineUsers.class.getName());
        logger.addHandler(capture);
        try {
            for (int pass = 0; pass < 3; pass++) {
                assertTrue(users.anyLive(dir));
            }
            assertEquals(List.of("other-uid"), users.liveIds(dir));
            assertTrue(Files.exists(lock), "a lock that may be held is not removed");
            assertEquals(1, warnings.size(), "named once: " + warnings);
            assertTrue(warnings.getFirst().contains("Counting " + lock + " as a live user"), warnings.getFirst());
        } finally {
            logger.removeHandler(capture);
        }
    }

    @Test
    void aUserLockThatIsADirectoryIsIgnored() throws Exception {
        EngineDir dir = new EngineDir(root);
        Files.createDirectories(dir.usersDir().resolve("odd.lock"));
        assertFalse(users.anyLive(dir));
    }
}
