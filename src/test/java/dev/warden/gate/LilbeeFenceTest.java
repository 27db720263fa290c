package dev.warden.gate;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.engine.ProcessInfo;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class LilbeeFenceTest {

    private static ProcessInfo argv(String... argv) {
        return new ProcessInfo(42, 1, 42, 42, Optional.empty(), List.of(argv));
    }

    @Test
    void onlyLilbeesServeCommandIsLilbeeServe() {
        assertTrue(LilbeeFence.isLilbeeServe(argv("/venv/bin/python", "/venv/bin/lilbee", "serve", "--port", "8080")));
        assertTrue(LilbeeFence.isLilbeeServe(argv("lilbee", "serve")));
        assertFalse(LilbeeFence.isLilbeeServe(argv("lilbee", "reset", "--yes")), "another lilbee command");
        assertFalse(LilbeeFence.isLilbeeServe(argv("flock", "server.lock", "sleep", "600")));
        assertFalse(LilbeeFence.isLilbeeServe(argv("serve", "lilbee")), "serve before lilbee");
        assertFalse(LilbeeFence.isLilbeeServe(argv("/opt/lilbee-helper", "serve")), "a name that only starts like it");
        assertFalse(LilbeeFence.isLilbeeServe(argv()));
    }
}
