package dev.warden.api;

import dev.warden.config.LilbeePaths;
import dev.warden.config.Mode;
import dev.warden.config.WardenConfig;
import dev.warden.gate.pod.GateKeeper;
import dev.warden.engine.EngineInspector;
import dev.warden.hold.LockInspector;
import dev.warden.hold.LockKeeper;
import dev.warden.library.LibraryLocks;
import dev.warden.reaper.ReaperService;
import io.smallrye.common.annotation.Blocking;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.net.SocketAddress;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.HeaderParam;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.net.InetAddress;
import java.util.Optional;

/**
 * {@code GET /api/v1/status}: what {@code warden status --json} shows, plus the reaper's own state. It
 * names paths, pids and holders, so it is not for whoever reaches the port: with {@code warden.api.token}
 * set it needs the token, and without one it answers only from this pod's loopback (a process of the
 * pod, {@code kubectl port-forward}, {@code kubectl exec}).
 */
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

    private final ApiToken token;

    public StatusResource(LockKeeper keeper, GateKeeper gate, LockInspector locks, EngineInspector engines,
            ReaperService reaper, StatusJson json, WardenConfig config, LibraryLocks library, ApiToken token) {
        this.token = token;
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
    public Response status(@HeaderParam(HttpHeaders.AUTHORIZATION) String authorization, @Context HttpServerRequest request) {
        switch (token.check(authorization)) {
            case DENIED -> {
                return ApiToken.unauthorized(json.error("warden.api.token is set: send Authorization: Bearer <warden.api.token>."));
            }
            case NOT_CONFIGURED -> {
                if (!fromLoopback(request)) {
                    return Response.status(Response.Status.FORBIDDEN).entity(json.error("With no warden.api.token set, the status"
                            + " answers only on loopback (a process of this pod, kubectl port-forward). Set warden.api.token"
                            + " (WARDEN_API_TOKEN) or warden.api.token-file to ask from elsewhere with it.")).build();
                }
            }
            case ALLOWED -> {
                // go on
            }
        }
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

    private static boolean fromLoopback(HttpServerRequest request) {
        SocketAddress peer = request.remoteAddress();
        if (peer == null || peer.hostAddress() == null) {
            // A Unix socket: on this machine.
            return peer != null;
        }
        try {
            return InetAddress.ofLiteral(peer.hostAddress()).isLoopbackAddress();
        } catch (IllegalArgumentException e) {
            return false;
        }
    }
}
