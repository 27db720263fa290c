package dev.warden.api;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.warden.control.ControlSocket;
import dev.warden.gate.pod.GateKeeper;
import io.smallrye.common.annotation.Blocking;
import jakarta.ws.rs.DefaultValue;
import jakarta.ws.rs.HeaderParam;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.time.Duration;
import java.util.Optional;

/**
 * {@code POST /api/v1/gate/step-down}: a planned switchover, as {@code warden step-down} asks it. The serving pod's lilbee
 * stops and the gate goes to a standby, whose lilbee starts warm; this warden holds back from contending again until
 * nothing of its pod holds the gate (GateDecision's step-down). It answers once this warden no longer serves (200), or
 * when {@code wait} seconds (default 15, at most 60) have passed first (202: in lease mode the Lease goes only once
 * lilbee has stopped); 409 where this warden is not elected (nothing to hand over), with the reason. It needs
 * {@code Authorization: Bearer <warden.api.token>}.
 */
@Path("/api/v1/gate")
@Produces(MediaType.APPLICATION_JSON)
public class GateResource {

    private final ApiToken token;
    private final GateKeeper gate;
    private final ObjectMapper mapper;

    public GateResource(ApiToken token, GateKeeper gate, ObjectMapper mapper) {
        this.token = token;
        this.gate = gate;
        this.mapper = mapper;
    }

    @POST
    @Path("/step-down")
    @Blocking
    public Response stepDown(@HeaderParam(HttpHeaders.AUTHORIZATION) String authorization,
            @QueryParam("wait") @DefaultValue("15") int waitSeconds) throws InterruptedException {
        Optional<Response> refused = token.refusal(authorization, "Gate actions", mapper);
        if (refused.isPresent()) {
            return refused.get();
        }
        if (gate.paths().isEmpty()) {
            return error(Response.Status.CONFLICT, "This warden runs no gate: only gate mode (warden serve --mode gate) has"
                    + " one to hand over.");
        }
        if (waitSeconds < 0 || waitSeconds > ControlSocket.MAX_WAIT_SECONDS) {
            return error(Response.Status.BAD_REQUEST, "wait must be 0 to " + ControlSocket.MAX_WAIT_SECONDS + " seconds, not "
                    + waitSeconds + ".");
        }
        ObjectNode body = mapper.createObjectNode();
        return switch (gate.stepDown(Duration.ofSeconds(waitSeconds))) {
            case GateKeeper.StepDown.SteppedDown done -> Response.ok(body.put("stepped_down", true).put("reason", done.reason()))
                    .build();
            case GateKeeper.StepDown.Stepping stepping -> Response.accepted(body.put("stepped_down", false)
                    .put("reason", stepping.reason())).build();
            // Not an error of the request: this pod does not serve (GET /api/v1/role says which does).
            case GateKeeper.StepDown.NotElected not -> Response.status(Response.Status.CONFLICT)
                    .entity(body.put("stepped_down", false).put("reason", not.reason())).build();
        };
    }

    private Response error(Response.Status status, String message) {
        return Response.status(status).entity(mapper.createObjectNode().put("error", message)).build();
    }
}
