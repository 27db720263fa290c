package dev.warden.metrics;

import dev.warden.gate.GateKeeper;
import dev.warden.gate.GateState;
import dev.warden.hold.LockKeeper;
import dev.warden.hold.LockKind;
import dev.warden.hold.LockState;
import dev.warden.hold.LockStatus;
import dev.warden.reaper.ReaperService;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * warden's gauges at {@code /q/metrics}. Each reads a snapshot the lock keeper or the reaper
 * already published, so a scrape does no file I/O.
 */
@Singleton
public class WardenMetrics {

    private final LockKeeper keeper;
    private final GateKeeper gate;
    private final ReaperService reaper;
    private final Set<LockKind> registered = ConcurrentHashMap.newKeySet();

    public WardenMetrics(LockKeeper keeper, GateKeeper gate, ReaperService reaper) {
        this.keeper = keeper;
        this.gate = gate;
        this.reaper = reaper;
    }

    void register(@Observes StartupEvent event, MeterRegistry meters) {
        // A series per lock this warden holds, from the moment the keeper plans it: none for a scope lock
        // it was not configured with (a NaN series would read as "unknown", not "not configured").
        keeper.onPlanned(kinds -> kinds.forEach(kind -> registerLock(kind, meters)));
        gate.onStart(() -> registerGate(meters));
        Gauge.builder("warden.engine.users.live", this, m -> m.reaper.status().liveUsers())
                .description("Processes holding the engine at the reaper's last pass").register(meters);
        Gauge.builder("warden.engine.keep.warm", this, m -> m.reaper.status().keepWarm())
                .description("Keep-warm markers in the engine dir at the reaper's last pass").register(meters);
        Gauge.builder("warden.reaper.watching", this, m -> m.reaper.status().watching() ? 1.0 : 0.0)
                .description("1 while this warden holds the engine dir's reaper lock").register(meters);
        Gauge.builder("warden.reaper.last.action.time", this, m -> m.reaper.status().lastActionAt()
                        .map(t -> t.toEpochMilli() / 1000.0).orElse(Double.NaN))
                .description("When the reaper last stopped or unloaded an engine, epoch seconds").baseUnit("seconds")
                .register(meters);
    }

    private void registerGate(MeterRegistry meters) {
        Gauge.builder("warden.gate.elected", this, m -> m.gate.snapshot().gate() instanceof GateState.Elected ? 1.0 : 0.0)
                .description("1 while this warden holds the gate (gate mode)").register(meters);
        Gauge.builder("warden.gate.started", this, m -> m.gate.snapshot().started() ? 1.0 : 0.0)
                .description("1 once this pod's lilbee may run (gate mode)").register(meters);
        Gauge.builder("warden.gate.serving", this, m -> m.gate.snapshot().serving() ? 1.0 : 0.0)
                .description("1 while this pod's lilbee holds server.lock (gate mode)").register(meters);
    }

    private void registerLock(LockKind kind, MeterRegistry meters) {
        if (!registered.add(kind)) {
            return;
        }
        Gauge.builder("warden.lock.held", this, m -> m.lock(kind).map(l -> l.held() ? 1.0 : 0.0).orElse(Double.NaN))
                .description("1 while warden holds this lock, 0 while another process does")
                .tag("lock", kind.label()).register(meters);
        Gauge.builder("warden.lock.last.wait", this, m -> m.lock(kind)
                        .filter(l -> l.state() instanceof LockState.Held)
                        .map(l -> ((LockState.Held) l.state()).waited().toNanos() / 1e9).orElse(Double.NaN))
                .description("How long warden stood by before it took this lock, in seconds")
                .baseUnit("seconds").tag("lock", kind.label()).register(meters);
    }

    private Optional<LockStatus> lock(LockKind kind) {
        return keeper.snapshot().lock(kind);
    }
}
