package dev.warden.reaper;

import dev.warden.config.WardenConfig;
import dev.warden.engine.EngineClient;
import dev.warden.engine.EngineDir;
import dev.warden.engine.EngineRecord;
import dev.warden.engine.EngineRecords;
import dev.warden.engine.EngineStopper;
import dev.warden.engine.EngineUsers;
import dev.warden.lock.FileLocker;
import dev.warden.lock.HeldLock;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.scheduler.Scheduled;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;
import java.net.URI;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchEvent;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.jboss.logging.Logger;

/**
 * warden's reaper while it serves: claims the engine dir's reaper lock (one reaper per engine
 * dir) and runs a pass of the rule every {@code warden.reaper.interval}. It keeps the lock for as
 * long as warden runs, so an engine built after a stop is watched too. When another reaper holds
 * the lock, it tries again each tick and publishes why it does not watch.
 */
@Singleton
public class ReaperService {

    private static final Logger LOG = Logger.getLogger(ReaperService.class);
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

    private final WardenConfig config;
    private final EngineUsers users;
    private final FileLocker locker;
    private final EngineRecords records;
    private final EngineStopper stopper;
    private final EngineClient client;
    private final InstantSource clock;
    private final MeterRegistry meters;
    private final java.util.Map<PassOutcome.Action, Counter> passes = new java.util.EnumMap<>(PassOutcome.Action.class);
    private final java.util.Set<Path> watchedUsers = java.util.concurrent.ConcurrentHashMap.newKeySet();

    private final AtomicReference<ReaperStatus> published = new AtomicReference<>(ReaperStatus.notStarted());
    // Touched by the scheduler's thread (one at a time) and by start/stop.
    private Reaper reaper;
    private HeldLock reaperLock;
    private volatile boolean stopped;
    /** The thread running a pass right now, for stop() to interrupt. */
    private volatile Thread passing;

    public ReaperService(WardenConfig config, EngineUsers users, FileLocker locker, EngineRecords records,
            EngineStopper stopper, EngineClient client, InstantSource clock, MeterRegistry meters) {
        this.meters = meters;
        this.config = config;
        this.users = users;
        this.locker = locker;
        this.records = records;
        this.stopper = stopper;
        this.client = client;
        this.clock = clock;
    }

    /** The rule for {@code dir}, as configured; also used by {@code warden reap --once}. */
    public Reaper reaperFor(EngineDir dir) {
        return new Reaper(dir, users, locker, records, stopper, client, clock, config.reaper().idleTtl(), config.engine().url());
    }

    /** Starts watching {@code dir}: the first claim waits up to the claim timeout to outlast a user's probe. */
    public synchronized void start(EngineDir dir) {
        reaper = reaperFor(dir);
        claim(config.reaper().claimTimeout());
        watchNewUsers(dir);
        LOG.infof("The reaper %s %s", reaperLock != null ? "watches" : "stands by for", dir.root());
        // A first pass now, not an interval from now: an engine orphaned before warden started is
        // stopped at once, and the live users' exits are watched from the start.
        tick();
    }

    public ReaperStatus status() {
        return published.get();
    }

    public Optional<EngineDir> dir() {
        Reaper current = reaper;
        return current == null ? Optional.empty() : Optional.of(current.dir());
    }

    @Scheduled(every = "${warden.reaper.interval}", delayed = "${warden.reaper.interval}",
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    synchronized void tick() {
        // Published before stopped is read, so stop() either finds this pass to interrupt or it never starts.
        passing = Thread.currentThread();
        try {
            if (reaper == null || stopped) {
                return;
            }
            if (reaperLock == null) {
                claim(Duration.ZERO);
                if (reaperLock == null) {
                    return;
                }
            }
            PassOutcome outcome = reaper.pass();
            if (outcome.action() != PassOutcome.Action.INTERRUPTED) {
                publish(outcome);
            }
        } catch (RuntimeException e) {
            LOG.error("A reaper pass failed; trying again next tick", e);
        } finally {
            passing = null;
            // The scheduler's and the watchers' threads outlive this pass: leave them uninterrupted.
            Thread.interrupted();
        }
    }

    void onShutdown(@Observes ShutdownEvent event) {
        stop();
    }

    /**
     * Stops watching and lets the reaper lock go. A pass under way is interrupted: it sends no
     * further signal and deletes nothing, so an engine it had only sent SIGTERM keeps its record
     * for the next reaper.
     */
    public void stop() {
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

    /**
     * Waits for one live user's exit on a thread of its own and runs a pass the moment it comes,
     * so the last user out is noticed at once; the tick stays as the backstop.
     */
    private void watchUser(Path userLock) {
        watchUser(userLock, false);
    }

    /**
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
            } catch (dev.warden.lock.LockException e) {
                LOG.debugf("Not watching %s: %s", userLock, e.getMessage());
                return;
            } finally {
                watchedUsers.remove(userLock);
            }
            tick();
        });
    }

    private boolean heldSoon(Path userLock) throws dev.warden.lock.LockException {
        long deadline = System.nanoTime() + NEW_USER_GRACE.toNanos();
        while (System.nanoTime() < deadline && !stopped) {
            if (locker.probe(userLock) == dev.warden.lock.LockProbe.HELD) {
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
    private void watchNewUsers(EngineDir dir) {
        Thread.ofPlatform().daemon().name("warden-users-dir-watch").start(() -> {
            try (WatchService watch = dir.root().getFileSystem().newWatchService()) {
                dir.root().register(watch, StandardWatchEventKinds.ENTRY_CREATE);
                registerUsersDir(dir, watch);
                while (!stopped) {
                    WatchKey key = watch.poll(1, java.util.concurrent.TimeUnit.SECONDS);
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
            } catch (java.io.IOException | RuntimeException e) {
                LOG.warnf("Not watching %s for new users (%s); the tick notices them instead", dir.usersDir(), e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
    }

    private static void registerUsersDir(EngineDir dir, WatchService watch) throws java.io.IOException {
        if (java.nio.file.Files.isDirectory(dir.usersDir())) {
            dir.usersDir().register(watch, StandardWatchEventKinds.ENTRY_CREATE);
        }
    }

    private void claim(Duration timeout) {
        Path lock = reaper.dir().reaperLock(config.reaper().lockName());
        try {
            java.nio.file.Files.createDirectories(reaper.dir().root());
            reaperLock = locker.tryLock(lock, timeout, CLAIM_POLL).orElse(null);
            publish(reaperLock != null ? "watching " + reaper.dir().root()
                    : "another reaper holds " + lock + "; this warden takes over when it exits");
        } catch (java.io.IOException e) {
            publish("cannot claim " + lock + ": " + e.getMessage());
        }
    }

    private void publish(String detail) {
        ReaperStatus last = published.get();
        published.set(new ReaperStatus(reaperLock != null, detail, reaper.idleSince(), last.lastPass(), last.lastAction(),
                last.lastActionAt(), last.engineExpected(), last.engineAnswers(), last.liveUsers(), last.keepWarm()));
    }

    private void publish(PassOutcome outcome) {
        ReaperStatus last = published.get();
        boolean acted = outcome.acted();
        List<EngineRecord> recorded = records.read(reaper.dir());
        Optional<URI> external = config.engine().url();
        boolean expected = !recorded.isEmpty() || external.isPresent();
        boolean answers = expected
                && recorded.stream().allMatch(r -> r.proxyPort().isPresent() && client.answers(EngineClient.loopback(r.proxyPort().getAsInt())))
                && external.map(client::answers).orElse(true);
        passes.computeIfAbsent(outcome.action(), action -> Counter.builder("warden.reaper.passes")
                .description("Reaper passes, by what they decided").tag("action", action.name().toLowerCase().replace('_', '-'))
                .register(meters)).increment();
        List<String> live = users.liveIds(reaper.dir());
        live.forEach(id -> watchUser(reaper.dir().userLock(id)));
        published.set(new ReaperStatus(true, "watching " + reaper.dir().root(), reaper.idleSince(), Optional.of(outcome),
                acted ? Optional.of(outcome) : last.lastAction(), acted ? Optional.of(clock.instant()) : last.lastActionAt(),
                expected, answers, live.size(), reaper.dir().keepWarmMarkers().size()));
    }
}
