package dev.warden.api;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.warden.routing.Role;
import dev.warden.routing.RoleRouting;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;

/**
 * {@code GET /api/v1/role}: whether this pod serves, as Patroni's {@code /primary} says it: 200 and {@code primary} while
 * {@code /q/health/ready} is UP, 503 and {@code standby} otherwise, for a load balancer's health check or a person. It
 * names no path, pid or holder, so it needs no token. With role routing, {@code routed} says whether the Service's
 * Endpoints routed to this pod as warden last read or wrote it.
 */
@Path("/api/v1/role")
public class RoleResource {

    private final RoleRouting routing;
    private final ObjectMapper mapper;

    public RoleResource(RoleRouting routing, ObjectMapper mapper) {
        this.routing = routing;
        this.mapper = mapper;
    }

    @GET
    @Produces(MediaType.APPLICATION_JSON)
    public Response role() {
        Role role = Role.of(routing.ready());
        ObjectNode body = mapper.createObjectNode().put("role", role.value());
        routing.applied().ifPresent(routed -> body.put("routed", routed == Role.PRIMARY));
        return Response.status(role == Role.PRIMARY ? 200 : 503).entity(body.toString()).build();
    }
}
