package dev.warden.reaper;

import dev.warden.engine.EngineClient;
import dev.warden.engine.EngineDir;
import dev.warden.engine.EngineIdentity;
import dev.warden.engine.EngineRecord;
import dev.warden.engine.EngineRecords;
import dev.warden.engine.EngineStopper;
import dev.warden.engine.EngineUsers;
import dev.warden.lock.FileLocker;
import dev.warden.lock.HeldLock;
import dev.warden.lock.LockException;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.jboss.logging.Logger;

/**
 * The last-user-out rule, pass by pass (its decision is {@link ReaperRule}'s). With no live user, under the
 * build lock: a kept-warm engine has its weights unloaded once after the idle time; any other
 * recorded engine is stopped. A llama-swap that lilbee did not start ({@code warden.engine.url})
 * is only ever unloaded, never signalled.
 *
 * <p>Not thread-safe: one scheduler thread runs the passes (concurrent runs are skipped).
 */
public final class Reaper {

    private static final Logger LOG = Logger.getLogger(Reaper.class);

    private final EngineDir dir;
    private final EngineUsers users;
    private final FileLocker locker;
    private final EngineRecords records;
    private final EngineStopper stopper;
    private final EngineClient client;
    private final EngineIdentity identity;
    private final InstantSource clock;
    /** The idle time of a kept-warm engine whose markers name none (lilbee's markers carry minutes). */
    private final Duration idleTtl;
    private final Optional<URI> externalEngine;
    /** The data root's other engine dirs: an engine recorded there and used by their users is theirs to stop. */
    private final List<EngineDir> others;
    /** Records refused because another dir's users hold their engine, each logged once. */
    private final Set<Path> refusalsLogged = new HashSet<>();

    /** When the last user left a kept-warm engine, and whether its weights were unloaded since. */
    private Instant idleSince;
    private boolean unloaded;
    /** Since when an engine has been held with no user, and for how long the rule lets it be. */
    private Unused unused;
    /** The kept-warm engine's idle time as the last unload decision read it from the markers. */
    private Duration keptWarmFor = Unused.NEVER;

    public Reaper(EngineDir dir, EngineUsers users, FileLocker locker, EngineRecords records, EngineStopper stopper,
            EngineIdentity identity, EngineClient client, InstantSource clock, Duration idleTtl, Optional<URI> externalEngine,
            List<EngineDir> others) {
        this.identity = identity;
        this.others = List.copyOf(others);
        this.dir = dir;
        this.users = users;
        this.locker = locker;
        this.records = records;
        this.stopper = stopper;
        this.client = client;
        this.clock = clock;
        this.idleTtl = idleTtl;
        this.externalEngine = externalEngine;
    }

    public EngineDir dir() {
        return dir;
    }

    /** The llama-swap lilbee did not start ({@code warden.engine.url}), if this reaper looks after it. */
    public Optional<URI> externalEngine() {
        return externalEngine;
    }

    /** When the idle window of a kept-warm engine began; empty while used or not kept warm. */
    public Optional<Instant> idleSince() {
        return Optional.ofNullable(idleSince);
    }

    /**
     * Since when an engine here has held memory with no user (weights loaded, or a stop that has not taken yet),
     * as of the last pass; empty while a user holds it, once its weights are unloaded, and when there is none.
     */
    public Optional<Unused> unused() {
        return Optional.ofNullable(unused);
    }

    /** One pass of the rule. */
    public PassOutcome pass() {
        PassOutcome outcome = decide();
        Optional<Duration> limit = switch (outcome.action()) {
            case IDLING, UNLOAD_REFUSED -> Optional.of(keptWarmFor);
            // A stop that took leaves no record; one still recorded is an engine the stop has not ended (yet).
            case STOPPED -> records.read(dir).isEmpty() ? Optional.empty() : Optional.of(Duration.ZERO);
            case BUILD_LOCK_HELD, INTERRUPTED -> Optional.ofNullable(unused).map(Unused::limit);
            case USERS_LIVE, NOTHING_TO_DO, UNLOADED, UNLOADED_EARLIER -> Optional.empty();
        };
        // The clock runs on while the rule's allowance stays the same: an engine whose unload keeps being refused
        // is timed from the first pass that found no user, and one whose stop keeps failing from the first stop;
        // a kept-warm engine stopped for not answering starts over there, as a stop is allowed no time at all.
        unused = limit.map(l -> unused != null && unused.limit().equals(l) ? unused : new Unused(clock.instant(), l))
                .orElse(null);
        return outcome;
    }

    private PassOutcome decide() {
        if (users.anyLive(dir)) {
            resetIdle();
            return new PassOutcome(PassOutcome.Action.USERS_LIVE, "a user holds the engine");
        }
        Optional<HeldLock> buildLock;
        try {
            buildLock = locker.tryLock(dir.buildLock());
        } catch (LockException e) {
            LOG.warn(e.getMessage());
            return new PassOutcome(PassOutcome.Action.BUILD_LOCK_HELD, e.getMessage());
        }
        if (buildLock.isEmpty()) {
            LOG.infof("Engine build lock at %s still held; checking again.", dir.root());
            return new PassOutcome(PassOutcome.Action.BUILD_LOCK_HELD, "the build lock is held; checking again");
        }
        try (HeldLock held = buildLock.get()) {
            // A user may have joined while the build lock was taken: the look is taken under it.
            ReaperRule.Look look = look(true);
            return act(look, ReaperRule.decide(look, Optional.ofNullable(idleSince), unloaded, clock.instant()));
        }
    }

    /** What {@link #pass()} would do now, without taking a lock, deleting a file or signalling: the same rule, said. */
    public PassOutcome dryRun() {
        ReaperRule.Look look = look(false);
        return switch (ReaperRule.decide(look, Optional.ofNullable(idleSince), unloaded, clock.instant())) {
            case ReaperRule.Decision.UsersLive live -> new PassOutcome(PassOutcome.Action.USERS_LIVE, "a user holds the engine");
            case ReaperRule.Decision.NothingToDo nothing -> new PassOutcome(PassOutcome.Action.NOTHING_TO_DO, nothing.why());
            case ReaperRule.Decision.UnloadedEarlier earlier -> new PassOutcome(PassOutcome.Action.UNLOADED_EARLIER,
                    "weights unloaded; watching");
            case ReaperRule.Decision.Idling idling -> new PassOutcome(PassOutcome.Action.IDLING, idling.why()
                    + (idleSince == null ? " (the idle time starts now)" : " (idle since " + idleSince + ")"));
            case ReaperRule.Decision.Unload unload -> new PassOutcome(PassOutcome.Action.UNLOADED, "would unload the weights:"
                    + " idle with no user for " + unload.idle().toSeconds() + " s");
            case ReaperRule.Decision.UnloadRefused refused -> new PassOutcome(PassOutcome.Action.UNLOAD_REFUSED,
                    refused.refusals());
            case ReaperRule.Decision.Stop stop -> new PassOutcome(PassOutcome.Action.STOPPED, "would stop "
                    + stop.engines().size() + " engine(s) (" + stop.why() + "): " + stop.engines().stream()
                            .map(r -> r.file().getFileName() + " (pid " + r.pid() + ")").toList());
        };
    }

    /**
     * What a pass sees: whether a user holds the engine (a pass removes the files of users that are gone, a dry run
     * only looks), the engines recorded, the keep-warm markers and the idle time they give, and which recorded engines
     * no other dir's live users hold.
     */
    private ReaperRule.Look look(boolean cleaning) {
        boolean usersLive = cleaning ? users.anyLive(dir) : !users.liveIds(dir).isEmpty();
        List<EngineRecord> recorded = usersLive ? List.of() : records.read(dir);
        // Each part is read only where the rule asks for it: the markers only of a recorded engine, its idle time only
        // of a kept-warm one, the other dirs only where the rule may stop (a kept-warm engine is unloaded while it
        // answers, never stopped).
        ReaperRule.Look look = new ReaperRule.Look(usersLive, recorded, externalEngine.isPresent(),
                !recorded.isEmpty() && !dir.keepWarmMarkers().isEmpty(), Optional.empty(), List.of());
        if (usersLive) {
            return look;
        }
        return look.keptWarm() ? look.withIdleTtl(dir.keepWarmIdle(idleTtl))
                : look.withStoppable(notUsedElsewhere(recorded, cleaning));
    }

    private PassOutcome act(ReaperRule.Look look, ReaperRule.Decision decision) {
        return switch (decision) {
            case ReaperRule.Decision.UsersLive live -> {
                resetIdle();
                yield new PassOutcome(PassOutcome.Action.USERS_LIVE, "a user joined");
            }
            case ReaperRule.Decision.NothingToDo nothing -> {
                resetIdle();
                yield new PassOutcome(PassOutcome.Action.NOTHING_TO_DO, nothing.why());
            }
            case ReaperRule.Decision.UnloadedEarlier earlier -> new PassOutcome(PassOutcome.Action.UNLOADED_EARLIER,
                    "weights unloaded; watching");
            case ReaperRule.Decision.Idling idling -> {
                idle(look);
                yield new PassOutcome(PassOutcome.Action.IDLING, idling.why());
            }
            case ReaperRule.Decision.Unload unload -> {
                idle(look);
                yield unload(look, unload.idle());
            }
            case ReaperRule.Decision.UnloadRefused refused -> {
                LOG.warnf("Unloading the engine at %s was refused (%s); trying again after another idle window", dir.root(),
                        refused.refusals());
                yield new PassOutcome(PassOutcome.Action.UNLOAD_REFUSED, refused.refusals());
            }
            case ReaperRule.Decision.Stop stop -> stop(stop);
        };
    }

    /** A kept-warm engine idles: its idle time starts, if it has not, and the rule's allowance is what its markers say. */
    private void idle(ReaperRule.Look look) {
        if (idleSince == null) {
            idleSince = clock.instant();
        }
        keptWarmFor = look.idleTtl().orElse(Unused.NEVER);
    }

    /**
     * Unloads a kept-warm engine's weights. A refused unload starts a new idle window; when none of the recorded
     * engines answers any more, they are gone, and they are stopped (their records cleaned up: an engine lilbee did
     * not start has no record and is never stopped).
     */
    private PassOutcome unload(ReaperRule.Look look, Duration idle) {
        List<EngineClient.Endpoint> engines = look.recorded().isEmpty()
                ? List.of(EngineClient.Endpoint.configured(externalEngine.orElseThrow())) : endpoints(look.recorded());
        List<String> refusals = engines.stream().map(client::unload).filter(r -> !r.unloaded())
                .map(EngineClient.UnloadResult::detail).toList();
        if (Thread.currentThread().isInterrupted()) {
            // Not a refusal: an engine that no longer seems to answer must not be stopped on the way out.
            return interrupted("during an unload");
        }
        if (!engines.isEmpty() && refusals.isEmpty()) {
            unloaded = true;
            LOG.infof("Engine weights unloaded at %s (idle with no user)", dir.root());
            return new PassOutcome(PassOutcome.Action.UNLOADED, "idle with no user for " + idle.toSeconds() + " s");
        }
        idleSince = clock.instant();
        boolean anyAnswers = look.recorded().stream().anyMatch(this::answers);
        ReaperRule.Look after = anyAnswers ? look : look.withStoppable(notUsedElsewhere(look.recorded(), true));
        return act(after, ReaperRule.afterRefusedUnload(after, anyAnswers, String.join("; ", refusals)));
    }

    private PassOutcome stop(ReaperRule.Decision.Stop stop) {
        List<String> done = stopper.stopAll(dir, stop.engines());
        if (Thread.currentThread().isInterrupted()) {
            return interrupted(String.join("; ", done));
        }
        resetIdle();
        LOG.infof("Engine stopped at %s (%s)", dir.root(), stop.why());
        return new PassOutcome(PassOutcome.Action.STOPPED, stop.why() + ": " + String.join("; ", done));
    }

    /**
     * The records whose engine no other dir both records and has live users for. lilbee records an engine
     * in one dir; a second record of it elsewhere is a neighbour's, which must not make this dir's idle
     * rule stop an engine its own users hold. Each other dir is read once a pass, and its users are looked
     * at (never cleaned up: that is its own reaper's work) only when it records one of these engines. A pass
     * logs each record it leaves so, once.
     */
    private List<EngineRecord> notUsedElsewhere(List<EngineRecord> recorded, boolean logged) {
        if (recorded.isEmpty()) {
            return List.of();
        }
        Map<Long, EngineDir> usedElsewhere = new HashMap<>();
        for (EngineDir other : others) {
            List<Long> shared = records.scan(other).records().stream().map(EngineRecord::pid)
                    .filter(pid -> recorded.stream().anyMatch(r -> r.pid() == pid)).toList();
            if (!shared.isEmpty() && !users.liveIds(other).isEmpty()) {
                shared.forEach(pid -> usedElsewhere.putIfAbsent(pid, other));
            }
        }
        List<EngineRecord> stoppable = new ArrayList<>();
        for (EngineRecord record : recorded) {
            EngineDir owner = usedElsewhere.get(record.pid());
            if (owner == null) {
                stoppable.add(record);
                if (logged) {
                    refusalsLogged.remove(record.file());
                }
            } else if (logged && refusalsLogged.add(record.file())) {
                LOG.warnf("Not stopping llama-swap pid %d for %s: it is also recorded in %s, whose users are live (a"
                        + " record here naming another dir's engine is not lilbee's); the record is left in place",
                        record.pid(), record.file(), owner.root());
            }
        }
        return stoppable;
    }

    private static PassOutcome interrupted(String detail) {
        LOG.infof("Reaper pass interrupted by shutdown (%s)", detail);
        return new PassOutcome(PassOutcome.Action.INTERRUPTED, detail);
    }

    private List<EngineClient.Endpoint> endpoints(List<EngineRecord> recorded) {
        List<EngineClient.Endpoint> endpoints = new ArrayList<>();
        for (EngineRecord record : recorded) {
            identity.endpoint(record).ifPresent(endpoints::add);
        }
        externalEngine.map(EngineClient.Endpoint::configured).ifPresent(endpoints::add);
        return endpoints;
    }

    private boolean answers(EngineRecord record) {
        return identity.endpoint(record).map(client::answers).orElse(false);
    }

    private void resetIdle() {
        idleSince = null;
        unloaded = false;
    }
}
