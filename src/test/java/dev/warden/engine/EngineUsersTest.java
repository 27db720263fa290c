package dev.warden.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.lock.FileLocker;
import dev.warden.lock.LockException;
import dev.warden.lock.NativePosix;
import dev.warden.testing.Peer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EngineUsersTest {

    @TempDir
    Path root;

    private final EngineUsers users = new EngineUsers(new FileLocker(new NativePosix()));

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
            assertThrows(LockException.class, () -> users.join(dir, "warden-exec"));
        }
        assertFalse(Files.exists(dir.userLock("warden-exec")), "a user that leaves removes its lock file");
        assertThrows(IllegalArgumentException.class, () -> users.join(dir, "../escape"));
    }

    @Test
    void aUserLockThatIsADirectoryIsIgnored() throws Exception {
        EngineDir dir = new EngineDir(root);
        Files.createDirectories(dir.usersDir().resolve("odd.lock"));
        assertFalse(users.anyLive(dir));
    }
}
