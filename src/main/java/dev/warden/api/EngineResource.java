package dev.warden.api;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.warden.engine.EngineActions;
import dev.warden.engine.EngineClient;
import dev.warden.engine.EngineDirs;
import dev.warden.lock.LockException;
import dev.warden.reaper.ReaperService;
import io.smallrye.common.annotation.Blocking;
import jakarta.ws.rs.HeaderParam;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.util.List;
import java.util.Optional;

/**
 * {@code POST /api/v1/engine/stop} and {@code /unload}: the CLI's engine actions over HTTP, for
 * an operator outside the pod. They need {@code Authorization: Bearer <warden.api.token>}.
 */
@Path("/api/v1/engine")
@Produces(MediaType.APPLICATION_JSON)
public class EngineResource {

    private final ApiToken token;
    private final EngineActions actions;
    private final ReaperService reaper;
    private final ObjectMapper mapper;

    public EngineResource(ApiToken token, EngineActions actions, ReaperService reaper, ObjectMapper mapper) {
        this.token = token;
        this.actions = actions;
        this.reaper = reaper;
        this.mapper = mapper;
    }

    @POST
    @Path("/stop")
    @Blocking
    public Response stop(@HeaderParam(HttpHeaders.AUTHORIZATION) String authorization) {
        return act(authorization, dirs -> {
            ObjectNode body = mapper.createObjectNode();
            actions.stop(dirs).forEach(body.putArray("done")::add);
            return Response.ok(body).build();
        });
    }

    @POST
    @Path("/unload")
    @Blocking
    public Response unload(@HeaderParam(HttpHeaders.AUTHORIZATION) String authorization) {
        return act(authorization, dirs -> {
            List<EngineClient.UnloadResult> results = actions.unload(dirs);
            ObjectNode body = mapper.createObjectNode();
            boolean all = !results.isEmpty() && results.stream().allMatch(EngineClient.UnloadResult::unloaded);
            body.put("unloaded", all);
            if (results.isEmpty()) {
                body.put("detail", "no engine is recorded in " + dirs.entries().stream().map(e -> e.dir().root().toString()).toList() + " and warden.engine.url is not set");
            }
            results.forEach(r -> body.withArray("results").addObject().put("unloaded", r.unloaded()).put("detail", r.detail()));
            return Response.status(all || results.isEmpty() ? Response.Status.OK : Response.Status.BAD_GATEWAY).entity(body).build();
        });
    }

    /** An engine action on the watched engine dir: authorised, and with every refusal as {"error": ...}. */
    private interface Action {
        Response on(EngineDirs dirs) throws EngineActions.BuildLockBusy, LockException;
    }

    private Response act(String authorization, Action action) {
        Optional<Response> refused = token.refusal(authorization, "Engine actions", mapper);
        if (refused.isPresent()) {
            return refused.get();
        }
        EngineDirs dirs = reaper.dirs();
        if (dirs.entries().isEmpty()) {
            return error(Response.Status.SERVICE_UNAVAILABLE, "The reaper is not running: warden serve has not started it"
                    + " (or warden.reaper.enabled is false), so there is no engine dir to act on.");
        }
        try {
            return action.on(dirs);
        } catch (EngineActions.BuildLockBusy e) {
            return error(Response.Status.CONFLICT, e.getMessage());
        } catch (LockException e) {
            return error(Response.Status.INTERNAL_SERVER_ERROR, e.getMessage());
        }
    }

    private Response error(Response.Status status, String message) {
        return Response.status(status).entity(mapper.createObjectNode().put("error", message)).build();
    }
}
