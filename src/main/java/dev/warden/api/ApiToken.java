package dev.warden.api;

import dev.warden.config.SecretFile;
import dev.warden.config.WardenConfig;
import com.fasterxml.jackson.databind.node.ObjectNode;
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

    /** 401 with the challenge that tells a client how to answer it. */
    static Response unauthorized(ObjectNode body) {
        return Response.status(Response.Status.UNAUTHORIZED).entity(body).header(HttpHeaders.WWW_AUTHENTICATE, "Bearer").build();
    }

    private Optional<String> expected() {
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
