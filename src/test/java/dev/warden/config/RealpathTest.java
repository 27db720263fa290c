package dev.warden.config;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link Realpath} gives what Python's {@code os.path.realpath(os.path.expanduser(p))} gives. */
class RealpathTest {

    @TempDir
    Path dir;

    private Realpath real;

    @BeforeEach
    void cwd() throws Exception {
        dir = dir.toRealPath();
        real = new Realpath(dir, Map.of("HOME", dir.resolve("home").toString()));
    }

    @Test
    void aLinkThenDotDotIsTheTargetsParentAsTheKernelWalksIt() throws Exception {
        Path target = Files.createDirectories(dir.resolve("a/b"));
        Files.createSymbolicLink(dir.resolve("link"), target);
        assertEquals(dir.resolve("a/x"), real.of(dir + "/link/../x"));
        // Path.normalize() would have said dir/x: two spellings, two locks.
    }

    @Test
    void relativeLinksMissingTailsAndTildes() throws Exception {
        Files.createDirectories(dir.resolve("real"));
        Files.createSymbolicLink(dir.resolve("rel"), Path.of("real"));
        assertEquals(dir.resolve("real/not/yet"), real.of("rel/not/yet"));
        assertEquals(dir.resolve("home/x"), real.of("~/x"));
        assertEquals(dir.resolve("home"), real.of("~"));
        assertEquals(Path.of("/root/x"), real.of("~root/x"));
        assertEquals(dir.resolve("~nobody-such/x"), real.of("~nobody-such/x"));
    }

    @Test
    void aLinkLoopStopsWhereItLoops() throws Exception {
        Files.createSymbolicLink(dir.resolve("loop"), dir.resolve("loop"));
        assertEquals(dir.resolve("loop/x"), real.of("loop/x"));
    }

    /** The same answers from Python itself, where python3 is installed. */
    @Test
    void agreesWithPython() throws Exception {
        Files.createDirectories(dir.resolve("a/b"));
        Files.createSymbolicLink(dir.resolve("l1"), dir.resolve("a/b"));
        Files.createSymbolicLink(dir.resolve("a/b/l2"), Path.of("../.."));
        List<String> cases = List.of("l1/../c", "l1/l2/a/./b//", "./l1/l2/l1", " pad ", "~/q/../r", "/" + dir + "/l1");
        org.junit.jupiter.api.Assumptions.assumeTrue(new ProcessBuilder("python3", "-c", "").start().waitFor() == 0, "no python3");
        for (String raw : cases) {
            ProcessBuilder python = new ProcessBuilder("python3", "-c",
                    "import os,sys; print(os.path.realpath(os.path.expanduser(sys.argv[1])))", raw)
                    .directory(dir.toFile()).redirectErrorStream(true);
            python.environment().put("HOME", dir.resolve("home").toString());
            Process process = python.start();
            String expected = new String(process.getInputStream().readAllBytes()).replaceAll("\n$", "");
            assertEquals(0, process.waitFor());
            assertEquals(expected, real.of(raw).toString(), raw);
        }
    }
}
