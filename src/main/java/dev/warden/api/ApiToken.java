package dev.warden.api;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.warden.config.SecretFile;
import dev.warden.config.WardenConfig;
import jakarta.inject.Singleton;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.Response;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.security.MessageDigest;
import java.util.Optional;

/**
 * The bearer token that guards the engine actions: {@code warden.api.token}, or the contents of
 * {@code warden.api.token-file} (a mounted Secret, read at each request so a rotation applies).
 */
@Singleton
public class ApiToken {

    private final WardenConfig config;

    public ApiToken(WardenConfig config) {
        this.config = config;
    }

    /** What a request's Authorization header earns it. */
    public enum Verdict {
        ALLOWED, NOT_CONFIGURED, DENIED
    }

    public Verdict check(String authorization) {
        Optional<String> expected = expected();
        if (expected.isEmpty()) {
            return Verdict.NOT_CONFIGURED;
        }
        String prefix = "Bearer ";
        if (authorization == null || !authorization.regionMatches(true, 0, prefix, 0, prefix.length())) {
            return Verdict.DENIED;
        }
        byte[] given = authorization.substring(prefix.length()).strip().getBytes(StandardCharsets.UTF_8);
        // Constant time: the comparison does not stop at the first differing byte.
        return MessageDigest.isEqual(given, expected.get().getBytes(StandardCharsets.UTF_8)) ? Verdict.ALLOWED : Verdict.DENIED;
    }

    /**
     * The answer to a request for {@code what} ("Engine actions") that {@code authorization} does not allow, as
     * {@code {"error": ...}}: 403 while no token is configured, 401 with the challenge for a wrong one; empty when allowed.
     */
    public Optional<Response> refusal(String authorization, String what, ObjectMapper mapper) {
        return switch (check(authorization)) {
            case NOT_CONFIGURED -> Optional.of(Response.status(Response.Status.FORBIDDEN).entity(mapper.createObjectNode()
                    .put("error", what + " are off: set warden.api.token (WARDEN_API_TOKEN) or warden.api.token-file to enable"
                            + " them.")).build());
            case DENIED -> Optional.of(unauthorized(mapper.createObjectNode().put("error", "Send Authorization: Bearer"
                    + " <warden.api.token>.")));
            case ALLOWED -> Optional.empty();
        };
    }

    /** 401 with the challenge that tells a client how to answer it. */
    static Response unauthorized(ObjectNode body) {
        return Response.status(Response.Status.UNAUTHORIZED).entity(body).header(HttpHeaders.WWW_AUTHENTICATE, "Bearer").build();
    }

    /** The token configured (warden.api.token, else the file warden.api.token-file names), if any. */
    public Optional<String> expected() {
        Optional<String> token = config.api().token().map(String::strip).filter(t -> !t.isEmpty());
        if (token.isPresent()) {
            return token;
        }
        return config.api().tokenFile().flatMap(file -> {
            try {
                return SecretFile.read(file);
            } catch (IOException e) {
                return Optional.empty();
            }
        });
    }
}
