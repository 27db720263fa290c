package dev.warden.api;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.warden.config.WardenConfig;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ApiTokenTest {

    @TempDir
    Path dir;

    private static ApiToken token(Optional<String> token, Optional<Path> file) {
        WardenConfig.Api api = new WardenConfig.Api() {
            public Optional<String> token() {
                return token;
            }

            public Optional<Path> tokenFile() {
                return file;
            }
        };
        return new ApiToken((WardenConfig) Proxy.newProxyInstance(WardenConfig.class.getClassLoader(),
                new Class<?>[] {WardenConfig.class}, (proxy, method, args) -> {
                    if (method.getName().equals("api")) {
                        return api;
                    }
                    throw new UnsupportedOperationException(method.getName());
                }));
    }

    @Test
    void withNoTokenConfiguredTheActionsAreOff() {
        assertEquals(ApiToken.Verdict.NOT_CONFIGURED, token(Optional.empty(), Optional.empty()).check("Bearer x"));
        assertEquals(ApiToken.Verdict.NOT_CONFIGURED, token(Optional.of("  "), Optional.empty()).check("Bearer  "));
    }

    @Test
    void onlyTheExactBearerTokenIsAllowed() {
        ApiToken token = token(Optional.of("s3cret"), Optional.empty());
        assertEquals(ApiToken.Verdict.ALLOWED, token.check("Bearer s3cret"));
        assertEquals(ApiToken.Verdict.ALLOWED, token.check("bearer s3cret"));
        assertEquals(ApiToken.Verdict.DENIED, token.check("Bearer s3cre"));
        assertEquals(ApiToken.Verdict.DENIED, token.check("Bearer s3cret2"));
        assertEquals(ApiToken.Verdict.DENIED, token.check("Basic s3cret"));
        assertEquals(ApiToken.Verdict.DENIED, token.check(null));
    }

    @Test
    void aTokenFileIsReadAtEachRequestSoARotationApplies() throws Exception {
        Path file = Files.writeString(dir.resolve("token"), "first\n");
        ApiToken token = token(Optional.empty(), Optional.of(file));
        assertEquals(ApiToken.Verdict.ALLOWED, token.check("Bearer first"));
        Files.writeString(file, "second");
        assertEquals(ApiToken.Verdict.DENIED, token.check("Bearer first"));
        assertEquals(ApiToken.Verdict.ALLOWED, token.check("Bearer second"));
        Files.delete(file);
        assertEquals(ApiToken.Verdict.NOT_CONFIGURED, token.check("Bearer second"));
    }
}
