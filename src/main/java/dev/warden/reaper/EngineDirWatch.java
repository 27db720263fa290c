package dev.warden.reaper;

import dev.warden.engine.EngineClient;
import dev.warden.engine.EngineDir;
import dev.warden.engine.EngineDirs;
import dev.warden.engine.EngineIdentity;
import dev.warden.engine.EngineRecord;
import dev.warden.engine.EngineRecords;
import dev.warden.engine.EngineUsers;
import dev.warden.lock.CheckedDir;
import dev.warden.lock.FileLocker;
import dev.warden.lock.HeldLock;
import dev.warden.lock.LockException;
import dev.warden.lock.LockProbe;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchEvent;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import org.jboss.logging.Logger;

/**
 * The reaper on one engine dir: claims the dir's reaper lock (one reaper per engine dir), runs the
 * rule's passes while it holds it, and waits in the kernel on each live user so the last user out
 * is noticed at once. A dir other than the slot is watched from the pass that finds an engine or a
 * user recorded in it; a reaper lock whose file was deleted or replaced (a {@code lilbee reset}
 * empties the data dir) is let go and claimed again, so two reapers never run on one dir.
 */
final class EngineDirWatch {

    private static final Logger LOG = Logger.getLogger(EngineDirWatch.class);
    /** filelock's poll while a claim waits out a starting user's probe. */
    private static final Duration CLAIM_POLL = Duration.ofMillis(50);
    /**
     * How many live users get a thread waiting in the kernel for their exit, so the reaper reacts
     * in milliseconds rather than at the next tick. Each is a blocked platform thread; past this
     * many, the tick alone notices the rest.
     */
    private static final int MAX_USER_WATCHERS = 64;
    /** How long a new user lock file may stay unlocked before its watcher leaves it to the tick. */
    private static final Duration NEW_USER_GRACE = Duration.ofSeconds(2);
    /** filelock asks again every 50 ms; probing a fresh file more often than that only gets in its way. */
    private static final Duration NEW_USER_POLL = Duration.ofMillis(20);

    private final EngineDirs.Entry entry;
    private final Reaper reaper;
    private final String lockName;
    private final FileLocker locker;
    private final EngineUsers users;
    private final EngineRecords records;
    private final EngineIdentity identity;
    private final EngineClient client;
    private final InstantSource clock;
    /** Counts a pass by what it decided (the service's meters). */
    private final java.util.function.Consumer<PassOutcome> counted;
    private final Set<Path> watchedUsers = ConcurrentHashMap.newKeySet();
    private final AtomicReference<ReaperStatus> published = new AtomicReference<>(ReaperStatus.notStarted());
    /** Passes that ended in an error, and claims of the reaper lock that failed for a reason other than a holder. */
    private final LongAdder failures = new LongAdder();

    // Touched by whichever thread runs a pass (one at a time: tick is synchronized) and by stop.
    private HeldLock reaperLock;
    private boolean watchingUsersDir;
    /** The last claim failed for a reason other than another holder (a read-only or missing dir). */
    private boolean claimFailed;
    /** The dir does not exist (yet): nothing to watch there, which is not a failure to watch. */
    private volatile boolean absent;
    private volatile boolean stopped;
    /** The thread running a pass right now, for stop() to interrupt. */
    private volatile Thread passing;

    /**
     * @param entry the dir and its role: warden creates and claims the machine slot at once, and waits
     *     for lilbee to record an engine or a user in the others
     * @param reaper the rule for {@code entry}'s dir
     */
    EngineDirWatch(EngineDirs.Entry entry, Reaper reaper, String lockName, FileLocker locker, EngineUsers users,
            EngineRecords records, EngineIdentity identity, EngineClient client, InstantSource clock,
            java.util.function.Consumer<PassOutcome> counted) {
        this.entry = entry;
        this.reaper = reaper;
        this.lockName = lockName;
        this.locker = locker;
        this.users = users;
        this.records = records;
        this.identity = identity;
        this.client = client;
        this.clock = clock;
        this.counted = counted;
    }

    String role() {
        return entry.role();
    }

    EngineDir dir() {
        return reaper.dir();
    }

    ReaperStatus status() {
        return published.get();
    }

    /** Passes (and claims) that failed since warden started. */
    long failures() {
        return failures.sum();
    }

    /** Watching, or with nothing to watch: a dir where lilbee recorded nothing holds no engine. */
    boolean covered() {
        return absent || published.get().watching();
    }

    /** The first claim: waits up to {@code timeout} to outlast a starting user's probe of the lock. */
    synchronized void start(Duration timeout) {
        claim(timeout);
        if (reaperLock != null) {
            LOG.infof("The reaper watches the %s engine dir %s", role(), dir().root());
        } else if (claimFailed) {
            LOG.warnf("The reaper cannot watch the %s engine dir: %s. Point warden.engine-dir (WARDEN_ENGINE_DIR) at the"
                    + " engine dir lilbee uses on the shared volume, writable for uid %s; until then the reaper tries"
                    + " again each tick.", role(), status().detail(), FileLocker.currentUid());
        } else {
            // The detail names the dir and why: nothing recorded there yet, or another reaper's lock.
            LOG.infof("The reaper does not watch yet: %s", status().detail());
        }
    }

    synchronized void tick() {
        // Published before stopped is read, so stop() either finds this pass to interrupt or it never starts.
        passing = Thread.currentThread();
        try {
            if (stopped) {
                return;
            }
            if (reaperLock != null && !reaperLock.stillAtPath()) {
                LOG.infof("The reaper lock %s was deleted or replaced; claiming it again", reaperLock.path());
                reaperLock.close();
                reaperLock = null;
            }
            if (reaperLock == null) {
                claim(Duration.ZERO);
                if (reaperLock == null) {
                    return;
                }
            }
            PassOutcome outcome = reaper.pass();
            if (outcome.action() != PassOutcome.Action.INTERRUPTED) {
                counted.accept(outcome);
                publish(outcome);
            }
        } catch (RuntimeException e) {
            failures.increment();
            LOG.error("A reaper pass on " + dir().root() + " failed; trying again next tick", e);
        } finally {
            passing = null;
            // The scheduler's and the watchers' threads outlive this pass: leave them uninterrupted.
            Thread.interrupted();
        }
    }

    /**
     * Stops watching and lets the reaper lock go. A pass under way is interrupted: it sends no
     * further signal and deletes nothing, so an engine it had only sent SIGTERM keeps its record
     * for the next reaper.
     */
    void stop() {
        stopped = true;
        Thread pass = passing;
        if (pass != null) {
            pass.interrupt();
        }
        synchronized (this) {
            if (reaperLock != null) {
                reaperLock.close();
                reaperLock = null;
            }
        }
    }

    private void claim(Duration timeout) {
        Path root = dir().root();
        Path lock = dir().reaperLock(lockName);
        try {
            if (entry.isSlot()) {
                CheckedDir.createDirectories(root);
            }
            // Only the slot is claimed before lilbee uses it: the others (the data dir among them) get no
            // reaper or build lock file of warden's until lilbee records an engine or a user there.
            absent = !entry.isSlot() && !dir().hasEngineFiles();
            if (absent) {
                publish("nothing recorded in the " + role() + " engine dir " + root + " yet; watched once lilbee"
                        + " records an engine or a user there");
                return;
            }
            reaperLock = locker.tryLock(lock, timeout, CLAIM_POLL).orElse(null);
            publish(reaperLock != null ? "watching " + root
                    : "another reaper holds " + lock + " (lilbee's own, or another warden's); this warden takes"
                            + " over when it exits");
            claimFailed = false;
        } catch (IOException e) {
            failures.increment();
            claimFailed = true;
            publish("cannot claim " + lock + ": " + e.getMessage());
        }
        if (reaperLock != null && !watchingUsersDir) {
            watchingUsersDir = true;
            watchNewUsers();
        }
    }

    /**
     * Waits for one live user's exit on a thread of its own and runs a pass the moment it comes,
     * so the last user out is noticed at once; the tick stays as the backstop.
     *
     * @param fresh the file has just appeared: wait (briefly) for its user to lock it first, or its
     *     release would be seen before the user ever held it
     */
    private void watchUser(Path userLock, boolean fresh) {
        if (watchedUsers.size() >= MAX_USER_WATCHERS || !watchedUsers.add(userLock)) {
            return;
        }
        Thread.ofPlatform().daemon().name("warden-user-watch").start(() -> {
            try {
                if (fresh && !heldSoon(userLock)) {
                    return;
                }
                locker.awaitRelease(userLock);
            } catch (LockException e) {
                LOG.debugf("Not watching %s: %s", userLock, e.getMessage());
                return;
            } finally {
                watchedUsers.remove(userLock);
            }
            tick();
        });
    }

    private boolean heldSoon(Path userLock) throws LockException {
        long deadline = System.nanoTime() + NEW_USER_GRACE.toNanos();
        while (System.nanoTime() < deadline && !stopped) {
            if (locker.probe(userLock) == LockProbe.HELD) {
                return true;
            }
            try {
                Thread.sleep(NEW_USER_POLL.toMillis());
            } catch (InterruptedException e) {
                return false;
            }
        }
        return false;
    }

    /**
     * Watches engine-users/ for new user lock files, so a user that joins and dies between two
     * passes is noticed when it dies, not at the next tick. inotify, on the same node as the users.
     */
    private void watchNewUsers() {
        EngineDir dir = dir();
        Thread.ofPlatform().daemon().name("warden-users-dir-watch").start(() -> {
            try (WatchService watch = dir.root().getFileSystem().newWatchService()) {
                dir.root().register(watch, StandardWatchEventKinds.ENTRY_CREATE);
                registerUsersDir(dir, watch);
                while (!stopped) {
                    WatchKey key = watch.poll(1, TimeUnit.SECONDS);
                    if (key == null) {
                        continue;
                    }
                    for (WatchEvent<?> event : key.pollEvents()) {
                        if (event.context() instanceof Path name) {
                            Path created = ((Path) key.watchable()).resolve(name);
                            if (created.equals(dir.usersDir())) {
                                registerUsersDir(dir, watch);
                            } else if (created.getParent().equals(dir.usersDir()) && name.toString().endsWith(".lock")) {
                                watchUser(created, true);
                            }
                        }
                    }
                    key.reset();
                }
            } catch (IOException | RuntimeException e) {
                LOG.warnf("Not watching %s for new users (%s); the tick notices them instead", dir.usersDir(), e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
    }

    /**
     * Watches engine-users/ from now on, and each user lock already in it: a lock created between the dir's creation
     * and this registration raised no event of its own (lilbee makes the dir and its first lock in one go).
     */
    private void registerUsersDir(EngineDir dir, WatchService watch) throws IOException {
        if (Files.isDirectory(dir.usersDir())) {
            dir.usersDir().register(watch, StandardWatchEventKinds.ENTRY_CREATE);
            dir.userLocks().forEach(lock -> watchUser(lock, true));
        }
    }

    private void publish(String detail) {
        ReaperStatus last = published.get();
        published.set(new ReaperStatus(reaperLock != null, detail, reaper.idleSince(), last.lastPass(), last.lastAction(),
                last.lastActionAt(), last.engineExpected(), last.engineAnswers(), last.liveUsers(), last.keepWarm(),
                reaperLock != null ? reaper.unused() : Optional.empty()));
    }

    private void publish(PassOutcome outcome) {
        ReaperStatus last = published.get();
        boolean acted = outcome.acted();
        List<EngineRecord> recorded = records.read(dir());
        Optional<URI> externalEngine = reaper.externalEngine();
        boolean expected = !recorded.isEmpty() || externalEngine.isPresent();
        boolean answers = expected
                && recorded.stream().allMatch(r -> identity.endpoint(r).map(client::answers).orElse(false))
                && externalEngine.map(url -> client.answers(EngineClient.Endpoint.configured(url))).orElse(true);
        List<String> live = users.liveIds(dir());
        live.forEach(id -> watchUser(dir().userLock(id), false));
        published.set(new ReaperStatus(true, "watching " + dir().root(), reaper.idleSince(), Optional.of(outcome),
                acted ? Optional.of(outcome) : last.lastAction(), acted ? Optional.of(clock.instant()) : last.lastActionAt(),
                expected, answers, live.size(), dir().keepWarmMarkers().size(), reaper.unused()));
    }
}
