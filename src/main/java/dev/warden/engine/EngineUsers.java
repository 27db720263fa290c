package dev.warden.engine;

import dev.warden.lock.CheckedDir;
import dev.warden.lock.Errno;
import dev.warden.lock.FileLocker;
import dev.warden.lock.HeldLock;
import dev.warden.lock.LockException;
import dev.warden.lock.LockProbe;
import dev.warden.lock.Posix;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.jboss.logging.Logger;

/**
 * The engine's users: one {@code engine-users/<id>.lock} per process, held for its whole life.
 * Liveness is the lock alone: a lock someone holds is a live user; a lock warden can take belongs
 * to a user that died (however it died), and its file is removed.
 */
public class EngineUsers {

    private static final Logger LOG = Logger.getLogger(EngineUsers.class);

    private static final int MAX_WARNED = 256;

    /**
     * How long a join waits for its own lock, as lilbee's {@code hold_user_lock} does: a reaper
     * takes every user lock for an instant to see whether its user lives (warden's and lilbee's
     * alike), and a join that asks in that instant must ask again, not fail.
     */
    static final Duration HOLD_TIMEOUT = Duration.ofSeconds(10);

    /** filelock's poll interval, which lilbee's hold uses. */
    private static final Duration HOLD_POLL = Duration.ofMillis(50);

    private final FileLocker locker;
    private final Set<Path> warned = ConcurrentHashMap.newKeySet();

    public EngineUsers(FileLocker locker) {
        this.locker = locker;
    }

    /** Whether any user lives; stops at the first live one, removing dead users' files on the way. */
    public boolean anyLive(EngineDir dir) {
        for (Path lock : dir.userLocks()) {
            if (live(lock, true)) {
                return true;
            }
        }
        return false;
    }

    /** The ids of the live users, for status; looks without removing anything. */
    public List<String> liveIds(EngineDir dir) {
        List<String> ids = new ArrayList<>();
        for (Path lock : dir.userLocks()) {
            if (live(lock, false)) {
                String name = lock.getFileName().toString();
                ids.add(name.substring(0, name.length() - ".lock".length()));
            }
        }
        return ids;
    }

    /**
     * Becomes a user: holds {@code engine-users/<id>.lock} until closed, when the file is removed
     * too (a user that dies instead leaves it to the reaper). The reaper never stops an engine
     * while this is held.
     */
    public AutoCloseable join(EngineDir dir, String id) throws LockException {
        return join(dir, id, HOLD_TIMEOUT);
    }

    /** {@link #join(EngineDir, String)}, failing when another process holds the id for {@code timeout}. */
    AutoCloseable join(EngineDir dir, String id, Duration timeout) throws LockException {
        if (!id.matches("[A-Za-z0-9_.-]+") || id.startsWith(".")) {
            throw new IllegalArgumentException("An engine user id is letters, digits, '.', '_' and '-', got '" + id + "'");
        }
        try {
            CheckedDir.createDirectories(dir.usersDir());
        } catch (IOException e) {
            throw new LockException("Cannot create " + dir.usersDir() + " (" + e + "): check the engine dir's volume.", e);
        }
        Path lock = dir.userLock(id);
        HeldLock held = locker.tryLock(lock, timeout, HOLD_POLL).orElseThrow(() -> new LockException(
                "Another process has held " + lock + " for " + timeout.toSeconds() + " s: pick another engine user id."));
        return () -> {
            // Removed while still held, so no one can take it in between and be removed with it.
            try {
                remove(held);
            } finally {
                held.close();
            }
        };
    }

    /**
     * Deletes a held user lock's file from its checked dir, and only while the name is still the
     * file locked: never through a link, never a file a neighbour has put in its place.
     */
    private static void remove(HeldLock held) throws IOException {
        try (CheckedDir dir = CheckedDir.open(held.path().getParent())) {
            dir.deleteIfSame(held.path().getFileName().toString(), held.fileId());
        }
    }

    private boolean live(Path lock, boolean removeDead) {
        try {
            if (!removeDead) {
                return locker.probe(lock) == LockProbe.HELD;
            }
            Optional<HeldLock> taken = locker.tryLock(lock);
            if (taken.isEmpty()) {
                return true;
            }
            try (HeldLock dead = taken.get()) {
                remove(dead);
                LOG.debugf("Removed the lock of a user that is gone: %s", lock);
            }
            return false;
        } catch (IOException e) {
            if (e.getCause() instanceof Posix.ErrnoException denied
                    && (denied.errno() == Errno.EACCES || denied.errno() == Errno.EPERM)) {
                // Another user's lock warden may not even read: it may well be held, and stopping a live
                // user's engine is the one mistake the reaper must not make.
                warnOnce(lock, "Counting %s as a live user: warden may not open it to ask its lock (uid %s). Make the"
                        + " engine dir's user locks readable to warden: a shared fsGroup, or umask 022 or 002 for lilbee.",
                        FileLocker.currentUid());
                return true;
            }
            // Not a user lock at all (a directory, a link, a FIFO): it holds no engine.
            warnOnce(lock, "Ignoring %s: %s", e.getMessage());
            return false;
        }
    }

    /** Each odd file is named once, not a pass a second; past a few hundred names (a neighbour making them), only at debug level. */
    private void warnOnce(Path lock, String format, Object detail) {
        if (warned.size() < MAX_WARNED && warned.add(lock)) {
            LOG.warnf(format, lock, detail);
        } else {
            LOG.debugf(format, lock, detail);
        }
    }
}
