package dev.warden.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Each step of lilbee's data-root resolution, as the real {@code lilbee serve} 0.6.90b449 was seen
 * to take it (LilbeeServeInteropIT checks the same rows against the real thing).
 */
class LilbeeEnvironmentTest {

    @TempDir
    Path dir;

    private Path home;
    private Path cwd;
    private final Map<String, String> env = new HashMap<>();

    @BeforeEach
    void machine() throws Exception {
        dir = dir.toRealPath();
        home = Files.createDirectories(dir.resolve("home"));
        cwd = Files.createDirectories(dir.resolve("work/project/sub"));
        env.put("HOME", home.toString());
    }

    private Path root() {
        return new LilbeeEnvironment(env, cwd).dataRoot(false).path();
    }

    @Test
    void withNothingSetTheRootIsUnderHome() {
        assertEquals(home.resolve(".local/share/lilbee"), root());
    }

    @Test
    void xdgDataHomeCountsWhenSetEvenEmpty() {
        env.put("XDG_DATA_HOME", dir.resolve("xdg").toString());
        assertEquals(dir.resolve("xdg/lilbee"), root());
        // Python's os.environ.get(...) is not None: an empty XDG_DATA_HOME is the working directory.
        env.put("XDG_DATA_HOME", "");
        assertEquals(cwd.resolve("lilbee"), root());
    }

    @Test
    void lilbeeDataWinsOverLilbeeDataRootAndIsTakenAsWritten() {
        env.put("LILBEE_DATA_ROOT", dir.resolve("y").toString());
        assertEquals(dir.resolve("y"), root());
        env.put("LILBEE_DATA", dir.resolve("x").toString());
        assertEquals(dir.resolve("x"), root());
        // lilbee's CLI does not strip LILBEE_DATA: padding becomes part of a relative path.
        env.put("LILBEE_DATA", "  " + dir.resolve("x") + "  ");
        assertEquals(cwd.resolve("  " + dir.resolve("x") + "  "), root());
    }

    @Test
    void blankLilbeeDataRootFallsThroughButPaddedOneIsKept() {
        env.put("LILBEE_DATA_ROOT", "   ");
        assertEquals(home.resolve(".local/share/lilbee"), root());
        env.put("LILBEE_DATA_ROOT", " y ");
        assertEquals(cwd.resolve(" y "), root());
    }

    @Test
    void anEmptyLilbeeDataIsUnset() {
        env.put("LILBEE_DATA", "");
        assertEquals(home.resolve(".local/share/lilbee"), root());
    }

    @Test
    void aDotLilbeeDirAboveTheWorkingDirectoryIsTheRoot() throws Exception {
        Path local = Files.createDirectories(dir.resolve("work/.lilbee"));
        assertEquals(local, root());
        env.put("LILBEE_DATA_ROOT", dir.resolve("y").toString());
        assertEquals(dir.resolve("y"), root(), "LILBEE_DATA_ROOT wins over the walk-up");
    }

    @Test
    void globalSkipsEveryVariableAndTheWalkUp() throws Exception {
        Files.createDirectories(dir.resolve("work/.lilbee"));
        env.put("LILBEE_DATA", dir.resolve("x").toString());
        env.put("LILBEE_DATA_ROOT", dir.resolve("y").toString());
        LilbeeEnvironment.Resolved global = new LilbeeEnvironment(env, cwd).dataRoot(true);
        assertEquals(home.resolve(".local/share/lilbee"), global.path());
        assertTrue(global.origin().contains("--global"), global.origin());
    }

    @Test
    void configTomlNamesTheRootBelowTheEnvironment() throws Exception {
        Path defaultRoot = Files.createDirectories(home.resolve(".local/share/lilbee"));
        Files.writeString(defaultRoot.resolve("config.toml"), "data_root = \"" + dir.resolve("from-toml") + "\"\ndata_dir = \"/ignored\"\n");
        LilbeeEnvironment.Resolved resolved = new LilbeeEnvironment(env, cwd).dataRoot(false);
        assertEquals(dir.resolve("from-toml"), resolved.path());
        assertTrue(resolved.origin().endsWith("config.toml"), resolved.origin());
        env.put("LILBEE_SKIP_TOML_CONFIG", "1");
        assertEquals(defaultRoot, root());
        env.remove("LILBEE_SKIP_TOML_CONFIG");
        env.put("LILBEE_DATA_ROOT", dir.resolve("y").toString());
        assertEquals(dir.resolve("y"), root());
    }

    @Test
    void aLocalRootsConfigTomlIsTheOneRead() throws Exception {
        Path local = Files.createDirectories(dir.resolve("work/.lilbee"));
        Files.writeString(local.resolve("config.toml"), "data_root = \"~/elsewhere\"\n");
        assertEquals(home.resolve("elsewhere"), root());
    }

    @Test
    void aBrokenConfigTomlIsPassedOver() throws Exception {
        Path defaultRoot = Files.createDirectories(home.resolve(".local/share/lilbee"));
        Files.writeString(defaultRoot.resolve("config.toml"), "data_root = [unclosed\n");
        assertEquals(defaultRoot, root());
        Files.writeString(defaultRoot.resolve("config.toml"), "data_root = 3\n");
        assertEquals(defaultRoot, root());
    }

    @Test
    void theEngineSlotIsStrippedButNotExpanded() {
        assertEquals(home.resolve(".local/state/lilbee/engine"), new LilbeeEnvironment(env, cwd).engineSlot());
        env.put("XDG_STATE_HOME", dir.resolve("state").toString());
        assertEquals(dir.resolve("state/lilbee/engine"), new LilbeeEnvironment(env, cwd).engineSlot());
        env.put("LILBEE_ENGINE_DIR", "  " + dir.resolve("slot") + " ");
        assertEquals(dir.resolve("slot"), new LilbeeEnvironment(env, cwd).engineSlot());
    }

    @Test
    void theScopeIsTakenAsWritten() {
        assertEquals(Optional.empty(), new LilbeeEnvironment(env, cwd).scopeDir());
        env.put("LILBEE_EXCLUSIVE_SCOPE", "shared");
        assertEquals(Optional.of(cwd.resolve("shared")), new LilbeeEnvironment(env, cwd).scopeDir());
    }

    @Test
    void lilbeeDataDirAndLancedbDirAreIgnoredAndSaidSo() {
        env.put("LILBEE_DATA", dir.resolve("x").toString());
        env.put("LILBEE_DATA_DIR", dir.resolve("custom").toString());
        env.put("LILBEE_LANCEDB_DIR", dir.resolve("lance").toString());
        LilbeeEnvironment lilbee = new LilbeeEnvironment(env, cwd);
        LilbeePaths paths = new LilbeePaths(dir.resolve("x"), dir.resolve("x/data"), dir.resolve("x/data/lancedb"),
                Optional.empty(), "LILBEE_DATA");
        List<String> notes = lilbee.ignoredVariables(paths, false, false);
        assertEquals(2, notes.size(), notes.toString());
        assertTrue(notes.get(0).contains(dir.resolve("x/data/server.lock").toString()), notes.get(0));
        assertTrue(notes.get(1).contains(dir.resolve("x/data/lancedb").toString()), notes.get(1));
        assertEquals(List.of(), lilbee.ignoredVariables(paths, true, true), "an explicit warden.* setting is what the user meant");
    }
}
