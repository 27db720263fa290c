package dev.warden.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.Peer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * lilbee's supervisor (helm/warden/files/lilbee-supervisor.py), held to its own tests against a real Python: its rules
 * to the table the simulation's model is held to too (src/test/python/supervisor_cases.json), and the supervisor as a
 * process beside a stand-in warden and lilbee (src/test/python/test_lilbee_supervisor.py). A test Python skips (one
 * needs root) is a skip here too, which CI counts as a failure.
 */
class SupervisorPythonTest {

    /** How many tests the file has, unsharded. */
    private static int all() throws Exception {
        ProcessBuilder counting = new ProcessBuilder("python3", "-c", "import unittest; print(unittest.TestLoader()"
                + ".discover('src/test/python').countTestCases())").redirectErrorStream(true);
        counting.environment().put("PYTHONDONTWRITEBYTECODE", "1");
        Process count = counting.start();
        String out = new String(count.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertEquals(0, count.waitFor(), out);
        return Integer.parseInt(out);
    }

    /** The tests wait on processes more than they compute: two shards at once take about half the time on two cores. */
    private static final int SHARDS = 2;

    @Test
    void theSupervisorPassesItsOwnTests() throws Exception {
        Peer.assumePython();
        List<Process> shards = new ArrayList<>();
        List<java.nio.file.Path> outputs = new ArrayList<>();
        for (int shard = 0; shard < SHARDS; shard++) {
            java.nio.file.Path output = java.nio.file.Files.createTempFile("supervisor-tests-", ".txt");
            output.toFile().deleteOnExit();
            ProcessBuilder tests = new ProcessBuilder("python3", "-m", "unittest", "discover", "-s", "src/test/python", "-v")
                    .redirectErrorStream(true).redirectOutput(output.toFile());
            // No __pycache__ beside the chart's file: helm would package it.
            tests.environment().put("PYTHONDONTWRITEBYTECODE", "1");
            tests.environment().put("SUPERVISOR_TEST_SHARD", shard + "/" + SHARDS);
            shards.add(tests.start());
            outputs.add(output);
        }
        List<String> texts = new ArrayList<>();
        try {
            for (int shard = 0; shard < SHARDS; shard++) {
                boolean ended = shards.get(shard).waitFor(5, TimeUnit.MINUTES);
                String output = java.nio.file.Files.readString(outputs.get(shard), StandardCharsets.UTF_8);
                assertTrue(ended, "the supervisor's tests did not end:\n" + output);
                texts.add(output);
            }
        } finally {
            shards.forEach(Process::destroyForcibly);
        }
        int ran = 0;
        for (int shard = 0; shard < SHARDS; shard++) {
            String output = texts.get(shard);
            assertEquals(0, shards.get(shard).exitValue(), output);
            assertTrue(output.contains("\nOK"), output);
            java.util.regex.Matcher count = java.util.regex.Pattern.compile("\nRan (\\d+) tests? ").matcher(output);
            assertTrue(count.find(), output);
            ran += Integer.parseInt(count.group(1));
        }
        assertEquals(all(), ran, "the shards together run every test once");
        // A skip proves nothing: reported once every shard has passed.
        for (String output : texts) {
            if (output.contains("skipped")) {
                org.junit.jupiter.api.Assumptions.abort("a supervisor test was skipped:\n" + output);
            }
        }
    }
}
