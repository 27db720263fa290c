package dev.warden.metrics;

import dev.warden.config.LilbeePaths;
import dev.warden.config.Mode;
import dev.warden.config.WardenConfig;
import dev.warden.gate.GateSnapshot;
import dev.warden.gate.GateState;
import dev.warden.gate.pod.GateKeeper;
import dev.warden.hold.HoldSnapshot;
import dev.warden.hold.LockKeeper;
import dev.warden.hold.LockKind;
import dev.warden.hold.LockState;
import dev.warden.hold.LockStatus;
import dev.warden.keeper.KeeperPhase;
import dev.warden.reaper.PassOutcome;
import dev.warden.reaper.ReaperService;
import dev.warden.reaper.Unused;
import dev.warden.routing.Role;
import dev.warden.routing.RoleRouting;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * warden's series at {@code /q/metrics}, each read from a snapshot the keepers or the reaper already
 * published, so a scrape does no file I/O. They appear when the lock keeper or the gate keeper starts,
 * labelled with the data dir it serves and the release ({@code warden.metrics.release}): what the alerts
 * group by to count the pods serving one data dir, which no single pod can see.
 */
@Singleton
public class WardenMetrics {

    private static final String SHARED = "1 while another pod holds this lock too, through a mount whose file locks do not"
            + " reach this one (its heartbeat beside the lock advances): the later of the two stands by, but the volume"
            + " cannot keep two servers off one data dir";

    private final LockKeeper keeper;
    private final GateKeeper gate;
    private final ReaperService reaper;
    private final RoleRouting routing;
    private final WardenConfig config;
    private final InstantSource clock;
    private final AtomicBoolean started = new AtomicBoolean();
    private final Set<LockKind> registered = ConcurrentHashMap.newKeySet();

    public WardenMetrics(LockKeeper keeper, GateKeeper gate, ReaperService reaper, RoleRouting routing, WardenConfig config,
            InstantSource clock) {
        this.keeper = keeper;
        this.gate = gate;
        this.reaper = reaper;
        this.routing = routing;
        this.config = config;
        this.clock = clock;
    }

    void register(@Observes StartupEvent event, MeterRegistry meters) {
        // A series per lock this warden holds, from the moment the keeper plans it: none for a scope lock
        // it was not configured with (a NaN series would read as "unknown", not "not configured").
        keeper.onPlanned((paths, kinds) -> {
            Tags labels = start(Mode.HOLD, paths, meters);
            kinds.forEach(kind -> registerLock(kind, labels, meters));
        });
        gate.onStart(paths -> registerGate(start(Mode.GATE, paths, meters), meters));
    }

    /** The series every serving warden has; registered once, by whichever keeper starts first. */
    private Tags start(Mode mode, LilbeePaths paths, MeterRegistry meters) {
        Tags dir = Tags.of("data_dir", paths.dataDir().toString());
        Tags labels = config.metrics().release().filter(r -> !r.isBlank()).map(r -> dir.and("release", r)).orElse(dir);
        if (!started.compareAndSet(false, true)) {
            return labels;
        }
        Gauge.builder("warden.info", () -> 1).description("Always 1; its labels say how this warden runs")
                .tags(labels).tag("mode", mode.name().toLowerCase(Locale.ROOT)).register(meters);
        Gauge.builder("warden.serving", this, m -> m.serving() ? 1.0 : 0.0)
                .description("1 while this pod serves the data dir: in hold mode warden holds every lock, in gate"
                        + " mode this pod's lilbee holds server.lock. More than one per data dir is a split brain")
                .tags(labels).register(meters);
        Gauge.builder("warden.engine.users.live", this, m -> m.reaper.status().liveUsers())
                .description("Processes holding the engine at the reaper's last pass").tags(labels).register(meters);
        Gauge.builder("warden.engine.keep.warm", this, m -> m.reaper.status().keepWarm())
                .description("Keep-warm markers in the engine dir at the reaper's last pass").tags(labels).register(meters);
        Gauge.builder("warden.engine.unused", this, m -> m.unused().map(u -> seconds(Duration.between(u.since(),
                        m.clock.instant()))).orElse(0.0))
                .description("How long an engine has held memory with no user (weights loaded, or a stop not taken"
                        + " yet), as of the reaper's last pass; 0 when none does")
                .baseUnit("seconds").tags(labels).register(meters);
        Gauge.builder("warden.engine.unused.limit", this, m -> m.unused().map(u -> u.limit().equals(Unused.NEVER)
                        ? Double.POSITIVE_INFINITY : seconds(u.limit())).orElse(Double.NaN))
                .description("How long the reaper lets that engine be: a kept-warm engine's idle time, 0 for one"
                        + " being stopped, +Inf for a keep-warm marker of 0 minutes")
                .baseUnit("seconds").tags(labels).register(meters);
        Gauge.builder("warden.reaper.watching", this, m -> m.reaper.status().watching() ? 1.0 : 0.0)
                .description("1 while this warden holds the engine dir's reaper lock").tags(labels).register(meters);
        Gauge.builder("warden.reaper.last.action.time", this, m -> m.reaper.status().lastActionAt()
                        .map(t -> t.toEpochMilli() / 1000.0).orElse(Double.NaN))
                .description("When the reaper last stopped or unloaded an engine, epoch seconds").baseUnit("seconds")
                .tags(labels).register(meters);
        for (PassOutcome.Action action : PassOutcome.Action.values()) {
            if (action != PassOutcome.Action.INTERRUPTED) {
                FunctionCounter.builder("warden.reaper.passes", reaper, r -> r.passes(action))
                        .description("Reaper passes, by what they decided").tags(labels)
                        .tag("action", action.name().toLowerCase(Locale.ROOT).replace('_', '-')).register(meters);
            }
        }
        FunctionCounter.builder("warden.reaper.pass.failures", reaper, ReaperService::failedPasses)
                .description("Reaper passes that ended in an error, and claims of a reaper lock that failed for a"
                        + " reason other than another holder (a read-only or missing dir)")
                .tags(labels).register(meters);
        return labels;
    }

    private void registerGate(Tags labels, MeterRegistry meters) {
        Gauge.builder("warden.gate.elected", this, m -> m.gate.snapshot().gate() instanceof GateState.Elected ? 1.0 : 0.0)
                .description("1 while this warden holds the gate (gate mode)").tags(labels).register(meters);
        Gauge.builder("warden.gate.started", this, m -> m.gate.snapshot().started() ? 1.0 : 0.0)
                .description("1 once this pod's lilbee may run (gate mode)").tags(labels).register(meters);
        Gauge.builder("warden.gate.serving", this, m -> m.gate.snapshot().serving() ? 1.0 : 0.0)
                .description("1 while this pod's lilbee holds server.lock (gate mode)").tags(labels).register(meters);
        FunctionCounter.builder("warden.gate.lock.lost", gate, GateKeeper::lostGateLocks)
                .description("Times the gate lock this warden held vanished under it: unlocked through a descriptor of its"
                        + " open file that another process has (gate mode); each stops this pod's lilbee")
                .tags(labels).register(meters);
        Gauge.builder("warden.lock.shared", this, m -> m.gate.gateLockShared() ? 1.0 : 0.0)
                .description(SHARED).tags(labels).tag("lock", "gate").register(meters);
        Gauge.builder("warden.gate.sees.pod.processes", () -> GateKeeper.seesPodProcesses() ? 1 : 0)
                .description("0 when warden is PID 1 of a PID namespace of its own, where it can never see its pod's"
                        + " lilbee, so this pod can never serve (set shareProcessNamespace: true)")
                .tags(labels).register(meters);
        if (config.gate().routing() == WardenConfig.Gate.Routing.ROLE) {
            Gauge.builder("warden.gate.routed", this, m -> m.routing.applied().map(r -> r == Role.PRIMARY ? 1.0 : 0.0)
                            .orElse(Double.NaN))
                    .description("Role routing: 1 while the Service's Endpoints routes to this pod, as this warden last"
                            + " read or wrote it; 0 while it does not. 0 beside warden_gate_serving 1 is a pod that serves"
                            + " and gets no clients")
                    .tags(labels).register(meters);
        }
        if (config.gate().election() == WardenConfig.Gate.Election.LEASE) {
            Gauge.builder("warden.gate.lease.renew.time", this, m -> m.gate.snapshot().lease()
                            .flatMap(GateSnapshot.LeaseView::renewed).map(t -> t.toEpochMilli() / 1000.0).orElse(Double.NaN))
                    .description("When the Lease's holder last renewed it, as this warden last read or wrote it, epoch"
                            + " seconds")
                    .baseUnit("seconds").tags(labels).register(meters);
            Gauge.builder("warden.gate.lease.duration", () -> seconds(config.gate().lease().duration()))
                    .description("How long the Lease is valid after a renewal (warden.gate.lease.duration)")
                    .baseUnit("seconds").tags(labels).register(meters);
        }
    }

    private void registerLock(LockKind kind, Tags labels, MeterRegistry meters) {
        if (!registered.add(kind)) {
            return;
        }
        Gauge.builder("warden.lock.held", this, m -> m.lock(kind).map(l -> l.held() ? 1.0 : 0.0).orElse(Double.NaN))
                .description("1 while warden holds this lock, 0 while another process does")
                .tags(labels).tag("lock", kind.label()).register(meters);
        if (kind == LockKind.DATA_DIR) {
            Gauge.builder("warden.lock.shared", this, m -> m.keeper.lockShared() ? 1.0 : 0.0)
                    .description(SHARED).tags(labels).tag("lock", kind.label()).register(meters);
        }
        Gauge.builder("warden.lock.last.wait", this, m -> m.lock(kind)
                        .filter(l -> l.state() instanceof LockState.Held)
                        .map(l -> ((LockState.Held) l.state()).waited().toNanos() / 1e9).orElse(Double.NaN))
                .description("How long warden stood by before it took this lock, in seconds")
                .baseUnit("seconds").tags(labels).tag("lock", kind.label()).register(meters);
    }

    private boolean serving() {
        GateSnapshot gated = gate.snapshot();
        if (gated.phase() != KeeperPhase.NOT_STARTED) {
            return gated.serving();
        }
        HoldSnapshot held = keeper.snapshot();
        return held.phase() == KeeperPhase.RUNNING && held.allHeld();
    }

    private Optional<Unused> unused() {
        return reaper.status().unused();
    }

    private Optional<LockStatus> lock(LockKind kind) {
        return keeper.snapshot().lock(kind);
    }

    private static double seconds(Duration duration) {
        return duration.toNanos() / 1e9;
    }
}
