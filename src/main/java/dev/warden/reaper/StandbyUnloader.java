package dev.warden.reaper;

import dev.warden.config.WardenConfig;
import dev.warden.engine.EngineClient;
import dev.warden.footprint.OneOffPages;
import dev.warden.hold.HoldSnapshot;
import dev.warden.hold.LockKeeper;
import dev.warden.hold.LockState;
import dev.warden.hold.LockStatus;
import dev.warden.keeper.KeeperPhase;
import io.quarkus.scheduler.Scheduled;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import java.net.URI;
import java.util.Optional;
import java.util.function.Supplier;
import org.jboss.logging.Logger;

/**
 * Hold mode: a warden that stands by (another pod holds lilbee's lock) unloads its own pod's llama-swap
 * ({@code warden.engine.url}), once per standby, with the reaper's unload. The kubelet restarts only
 * warden's container when warden alone dies, so the pod's llama-swap may still hold its models' memory
 * while the pod serves nothing. A refused unload is tried again at the next tick.
 */
@Singleton
public class StandbyUnloader {

    private static final Logger LOG = Logger.getLogger(StandbyUnloader.class);

    private final Supplier<HoldSnapshot> keeper;
    private final EngineClient client;
    private final Optional<URI> engine;
    private final boolean enabled;
    /** Run after each unload asked for, done or refused: what it ran is mapped for nothing more. */
    private final Runnable afterUnload;
    private boolean unloaded;

    @Inject
    public StandbyUnloader(LockKeeper keeper, EngineClient client, WardenConfig config, OneOffPages oneOffPages) {
        this(keeper::snapshot, client, config.engine().url(), config.reaper().enabled(),
                () -> oneOffPages.releaseLater("an engine's unload"));
    }

    StandbyUnloader(Supplier<HoldSnapshot> keeper, EngineClient client, Optional<URI> engine, boolean enabled,
            Runnable afterUnload) {
        this.keeper = keeper;
        this.client = client;
        this.engine = engine;
        this.enabled = enabled;
        this.afterUnload = afterUnload;
    }

    @Scheduled(every = "${warden.reaper.interval}", concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void tick() {
        look();
    }

    /** Unloads the pod's engine if this warden stands by and has not unloaded it since it began to. */
    synchronized Optional<EngineClient.UnloadResult> look() {
        HoldSnapshot snapshot = keeper.get();
        Optional<LockStatus> elsewhere = snapshot.phase() != KeeperPhase.RUNNING ? Optional.empty()
                : snapshot.locks().stream().filter(l -> l.state() instanceof LockState.HeldElsewhere).findFirst();
        if (elsewhere.isEmpty()) {
            unloaded = false;
            return Optional.empty();
        }
        if (!enabled || engine.isEmpty() || unloaded) {
            return Optional.empty();
        }
        EngineClient.UnloadResult result = client.unload(EngineClient.Endpoint.configured(engine.get()));
        afterUnload.run();
        if (result.unloaded()) {
            unloaded = true;
            LOG.infof("Standing by (another process holds %s): unloaded this pod's llama-swap at %s, whose weights would"
                    + " otherwise hold memory in a pod that serves nothing", elsewhere.get().path(), engine.get());
        } else {
            LOG.warnf("Standing by, but this pod's llama-swap at %s did not unload (%s); trying again at the next tick",
                    engine.get(), result.detail());
        }
        return Optional.of(result);
    }
}
