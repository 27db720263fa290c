package dev.warden.api;

import dev.warden.config.LilbeePaths;
import dev.warden.config.Mode;
import dev.warden.config.WardenConfig;
import dev.warden.gate.GateKeeper;
import dev.warden.engine.EngineInspector;
import dev.warden.hold.LockInspector;
import dev.warden.hold.LockKeeper;
import dev.warden.library.LibraryLocks;
import dev.warden.reaper.ReaperService;
import io.smallrye.common.annotation.Blocking;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.util.Optional;

/** {@code GET /api/v1/status}: what {@code warden status --json} shows, plus the reaper's own state. */
@Path("/api/v1/status")
public class StatusResource {

    private final LockKeeper keeper;
    private final GateKeeper gate;
    private final LockInspector locks;
    private final EngineInspector engines;
    private final ReaperService reaper;
    private final StatusJson json;
    private final WardenConfig config;
    private final LibraryLocks library;

    public StatusResource(LockKeeper keeper, GateKeeper gate, LockInspector locks, EngineInspector engines,
            ReaperService reaper, StatusJson json, WardenConfig config, LibraryLocks library) {
        this.library = library;
        this.keeper = keeper;
        this.gate = gate;
        this.locks = locks;
        this.engines = engines;
        this.reaper = reaper;
        this.json = json;
        this.config = config;
    }

    @GET
    @Blocking
    @Produces(MediaType.APPLICATION_JSON)
    public Response status() {
        Optional<LilbeePaths> gated = gate.paths();
        Optional<LilbeePaths> paths = keeper.paths().or(() -> gated);
        if (paths.isEmpty()) {
            return Response.status(Response.Status.SERVICE_UNAVAILABLE)
                    .entity(json.error("warden is starting: it has not begun to serve yet")).build();
        }
        return Response.ok(json.document(paths.get(), gated.isPresent() ? Mode.GATE : Mode.HOLD, locks.look(paths.get()),
                library.look(paths.get().dataRoot(), paths.get().lancedbDir()),
                engines.look(reaper.dirs(), config.reaper().lockName()), Optional.of(reaper),
                gated.map(g -> gate.snapshot()))).build();
    }
}
