package dev.warden.reaper;

import dev.warden.config.WardenConfig;
import dev.warden.engine.EngineClient;
import dev.warden.engine.EngineDir;
import dev.warden.engine.EngineDirs;
import dev.warden.engine.EngineIdentity;
import dev.warden.engine.EngineRecords;
import dev.warden.engine.EngineStopper;
import dev.warden.engine.EngineUsers;
import dev.warden.events.PodEvent;
import dev.warden.events.PodEvents;
import dev.warden.footprint.OneOffPages;
import dev.warden.lock.FileLocker;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.scheduler.Scheduled;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.LongAdder;

/**
 * warden's reaper while it serves: one {@link EngineDirWatch} on each engine dir lilbee uses for
 * the data root (the machine slot, the overflow dir, the legacy data dir), each claiming that dir's
 * reaper lock and running a pass of the rule every {@code warden.reaper.interval}. It keeps the
 * locks for as long as warden runs, so an engine built after a stop is watched too.
 */
@Singleton
public class ReaperService {

    private final WardenConfig config;
    private final EngineUsers users;
    private final FileLocker locker;
    private final EngineRecords records;
    private final EngineStopper stopper;
    private final EngineClient client;
    private final EngineIdentity identity;
    private final InstantSource clock;
    /** The Events of the reaper's actions, on warden's pod (nothing unless warden.events.enabled). */
    private final PodEvents events;
    private final OneOffPages oneOffPages;
    private final Map<PassOutcome.Action, LongAdder> passes = new EnumMap<>(PassOutcome.Action.class);

    private volatile List<EngineDirWatch> watches = List.of();
    private volatile boolean stopped;

    public ReaperService(WardenConfig config, EngineUsers users, FileLocker locker, EngineRecords records,
            EngineStopper stopper, EngineIdentity identity, EngineClient client, InstantSource clock, PodEvents events,
            OneOffPages oneOffPages) {
        this.identity = identity;
        this.oneOffPages = oneOffPages;
        this.events = events;
        for (PassOutcome.Action action : PassOutcome.Action.values()) {
            passes.put(action, new LongAdder());
        }
        this.config = config;
        this.users = users;
        this.locker = locker;
        this.records = records;
        this.stopper = stopper;
        this.client = client;
        this.clock = clock;
    }

    /**
     * The rule for {@code dir}, as configured; also used by {@code warden reap --once}. Only the
     * machine slot's reaper looks after {@code warden.engine.url}, so it is unloaded once, not once a dir.
     */
    public Reaper reaperFor(EngineDirs.Entry entry, EngineDirs all) {
        List<EngineDir> others = all.entries().stream().map(EngineDirs.Entry::dir).filter(d -> !d.equals(entry.dir())).toList();
        return new Reaper(entry.dir(), users, locker, records, stopper, identity, client, clock, config.reaper().idleTtl(),
                entry.isSlot() ? config.engine().url() : Optional.empty(), others);
    }

    /**
     * Starts watching every dir: each first claim waits up to the claim timeout to outlast a user's
     * probe, and a first pass runs at once, so an engine orphaned before warden started is stopped
     * now and the live users' exits are watched from the start.
     */
    public synchronized void start(EngineDirs dirs) {
        List<EngineDirWatch> started = dirs.entries().stream().map(entry -> watch(entry, dirs)).toList();
        watches = started;
        for (EngineDirWatch watch : started) {
            watch.start(config.reaper().claimTimeout());
        }
        tick();
    }

    private EngineDirWatch watch(EngineDirs.Entry entry, EngineDirs all) {
        return new EngineDirWatch(entry, reaperFor(entry, all), config.reaper().lockName(), locker,
                users, records, identity, client, clock, this::count);
    }

    @Scheduled(every = "${warden.reaper.interval}", delayed = "${warden.reaper.interval}",
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void tick() {
        for (EngineDirWatch watch : watches) {
            if (stopped) {
                return;
            }
            watch.tick();
        }
    }

    /** The dirs watched, slot first; empty until {@code serve} starts the reaper. */
    public List<Watched> watched() {
        return watches.stream().map(w -> new Watched(w.role(), w.dir(), w.status())).toList();
    }

    /** The dirs watched, as {@link EngineDirs}; no entries until {@code serve} starts the reaper. */
    public EngineDirs dirs() {
        return new EngineDirs(watches.stream().map(w -> new EngineDirs.Entry(w.role(), w.dir())).toList());
    }

    /** One watched engine dir and its reaper's state. */
    public record Watched(String role, EngineDir dir, ReaperStatus status) {
    }

    /**
     * The reaper as the probes and metrics see it: the machine slot's state and passes; watching
     * only when every dir that exists is watched; an engine expected when one is recorded anywhere, answering
     * only when every expected one answers; users and markers added up; the latest action anywhere.
     */
    public ReaperStatus status() {
        List<ReaperStatus> all = watches.stream().map(EngineDirWatch::status).toList();
        if (all.isEmpty()) {
            return ReaperStatus.notStarted();
        }
        ReaperStatus slot = all.getFirst();
        Optional<ReaperStatus> latest = all.stream().filter(s -> s.lastActionAt().isPresent())
                .max(Comparator.comparing(s -> s.lastActionAt().orElse(Instant.MIN)));
        boolean expected = all.stream().anyMatch(ReaperStatus::engineExpected);
        return new ReaperStatus(watches.stream().allMatch(EngineDirWatch::covered), slot.detail(), slot.idleSince(),
                slot.lastPass(), latest.flatMap(ReaperStatus::lastAction), latest.flatMap(ReaperStatus::lastActionAt),
                expected, expected && all.stream().allMatch(s -> !s.engineExpected() || s.engineAnswers()),
                all.stream().mapToInt(ReaperStatus::liveUsers).sum(), all.stream().mapToInt(ReaperStatus::keepWarm).sum(),
                all.stream().flatMap(s -> s.unused().stream())
                        .max(Comparator.comparing(u -> u.overdue(clock.instant()))));
    }

    /** How many passes decided {@code action} since warden started, over every watched dir. */
    public long passes(PassOutcome.Action action) {
        return passes.get(action).sum();
    }

    /** How many passes (and claims of a reaper lock) ended in an error since warden started. */
    public long failedPasses() {
        return watches.stream().mapToLong(EngineDirWatch::failures).sum();
    }

    void onShutdown(@Observes ShutdownEvent event) {
        stop();
    }

    /** Stops every dir's reaper: a pass under way is interrupted, and the reaper locks are let go. */
    public void stop() {
        stopped = true;
        watches.forEach(EngineDirWatch::stop);
    }

    private void count(PassOutcome outcome) {
        passes.get(outcome.action()).increment();
        switch (outcome.action()) {
            case STOPPED -> {
                events.record(PodEvent.normal("EngineStopped", "the engine was stopped: " + outcome.detail()));
                oneOffPages.releaseLater("an engine's stop");
            }
            case UNLOADED -> {
                events.record(PodEvent.normal("EngineUnloaded", "the engine's weights were unloaded: " + outcome.detail()));
                oneOffPages.releaseLater("an engine's unload");
            }
            case UNLOAD_REFUSED -> {
                events.record(PodEvent.warning("EngineUnloadRefused", outcome.detail()));
                oneOffPages.releaseLater("an engine's unload");
            }
            default -> {
                // not an action: no Event
            }
        }
    }
}
