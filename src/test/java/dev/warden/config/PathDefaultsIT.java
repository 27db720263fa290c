package dev.warden.config;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.warden.testing.WardenProcess;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** warden finds lilbee's files where lilbee puts them, from the same environment variables. */
class PathDefaultsIT {

    private static final String[] LILBEE_VARS = {"LILBEE_DATA", "LILBEE_DATA_ROOT", "LILBEE_DATA_DIR", "LILBEE_LANCEDB_DIR",
        "LILBEE_EXCLUSIVE_SCOPE", "LILBEE_ENGINE_DIR", "XDG_DATA_HOME", "WARDEN_DATA_ROOT", "WARDEN_DATA_DIR",
        "WARDEN_SCOPE_DIR", "WARDEN_LANCEDB_DIR", "WARDEN_ENGINE_DIR"};

    @TempDir
    Path dir;

    private JsonNode status(Map<String, String> env, String... args) throws Exception {
        Map<String, String> all = new HashMap<>();
        for (String var : LILBEE_VARS) {
            all.put(var, "");
        }
        all.put("HOME", dir.resolve("home").toString());
        all.putAll(env);
        String[] command = new String[args.length + 2];
        command[0] = "status";
        command[1] = "--json";
        System.arraycopy(args, 0, command, 2, args.length);
        WardenProcess.Result result = WardenProcess.run(all, command);
        assertEquals(0, result.exitCode(), result.stderr());
        return new ObjectMapper().readTree(result.stdout());
    }

    @Test
    void withNothingSetTheDataRootIsUnderHome() throws Exception {
        JsonNode status = status(Map.of());
        assertEquals(dir.resolve("home/.local/share/lilbee").toString(), status.get("data_root").asText());
        assertEquals(dir.resolve("home/.local/share/lilbee/data").toString(), status.get("data_dir").asText());
        assertEquals(true, status.get("scope_dir").isNull());
    }

    @Test
    void xdgDataHomeMovesTheDataRoot() throws Exception {
        JsonNode status = status(Map.of("XDG_DATA_HOME", dir.resolve("xdg").toString()));
        assertEquals(dir.resolve("xdg/lilbee").toString(), status.get("data_root").asText());
    }

    @Test
    void lilbeeDataWinsOverXdg() throws Exception {
        JsonNode status = status(Map.of("XDG_DATA_HOME", dir.resolve("xdg").toString(), "LILBEE_DATA", dir.resolve("ld").toString()));
        assertEquals(dir.resolve("ld").toString(), status.get("data_root").asText());
        assertEquals(dir.resolve("ld/data").toString(), status.get("data_dir").asText());
    }

    @Test
    void lilbeeDataDirIsIgnoredAsLilbeeServeIgnoresItAndTheScopeIsHonoured() throws Exception {
        JsonNode status = status(Map.of("LILBEE_DATA", dir.resolve("ld").toString(),
                "LILBEE_DATA_DIR", dir.resolve("elsewhere").toString(),
                "LILBEE_LANCEDB_DIR", dir.resolve("lance").toString(),
                "LILBEE_EXCLUSIVE_SCOPE", dir.resolve("scope").toString()));
        assertEquals(dir.resolve("ld/data").toString(), status.get("data_dir").asText());
        assertEquals(dir.resolve("ld/data/lancedb").toString(), status.get("lancedb_dir").asText());
        assertEquals(dir.resolve("scope").toString(), status.get("scope_dir").asText());
        assertEquals("scope", status.at("/locks/0/name").asText());
    }

    @Test
    void lilbeeDataRootAndGlobalAreHonoured() throws Exception {
        JsonNode status = status(Map.of("LILBEE_DATA_ROOT", dir.resolve("y").toString()));
        assertEquals(dir.resolve("y/data").toString(), status.get("data_dir").asText());
        assertEquals("LILBEE_DATA_ROOT", status.get("data_root_from").asText());
        status = status(Map.of("LILBEE_DATA_ROOT", dir.resolve("y").toString()), "--global");
        assertEquals(dir.resolve("home/.local/share/lilbee").toString(), status.get("data_root").asText());
    }

    @Test
    void theThreeEngineDirsAreLookedAtSlotFirst() throws Exception {
        JsonNode status = status(Map.of("LILBEE_DATA", dir.resolve("ld").toString(),
                "LILBEE_ENGINE_DIR", dir.resolve("slot").toString()));
        assertEquals(dir.resolve("slot").toString(), status.at("/engines/0/dir").asText());
        assertEquals("slot", status.at("/engines/0/role").asText());
        assertEquals(dir.resolve("ld/data/engine").toString(), status.at("/engines/1/dir").asText());
        assertEquals("overflow", status.at("/engines/1/role").asText());
        assertEquals(dir.resolve("ld/data").toString(), status.at("/engines/2/dir").asText());
        assertEquals("legacy", status.at("/engines/2/role").asText());
    }

    @Test
    void wardenVariablesAndTheCommandLineOverrideLilbees() throws Exception {
        JsonNode status = status(Map.of("LILBEE_DATA", dir.resolve("ld").toString(), "WARDEN_DATA_ROOT", dir.resolve("wd").toString()));
        assertEquals(dir.resolve("wd").toString(), status.get("data_root").asText());
        status = status(Map.of("WARDEN_DATA_ROOT", dir.resolve("wd").toString()), "--data-root", dir.resolve("cli").toString(),
                "--scope", dir.resolve("s").toString());
        assertEquals(dir.resolve("cli/data").toString(), status.get("data_dir").asText());
        assertEquals(dir.resolve("s").toString(), status.get("scope_dir").asText());
    }
}
