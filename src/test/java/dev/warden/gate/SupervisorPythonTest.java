package dev.warden.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.Peer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * lilbee's supervisor (helm/warden/files/lilbee-supervisor.py), held to its own tests against a real Python: its rules
 * to the table the simulation's model is held to too (src/test/python/supervisor_cases.json), and the supervisor as a
 * process beside a stand-in warden and lilbee (src/test/python/test_lilbee_supervisor.py). A test Python skips (one
 * needs root) is a skip here too, which CI counts as a failure.
 */
class SupervisorPythonTest {

    @Test
    void theSupervisorPassesItsOwnTests() throws Exception {
        Peer.assumePython();
        ProcessBuilder tests = new ProcessBuilder("python3", "-m", "unittest", "discover", "-s", "src/test/python", "-v")
                .redirectErrorStream(true);
        // No __pycache__ beside the chart's file: helm would package it.
        tests.environment().put("PYTHONDONTWRITEBYTECODE", "1");
        Process python = tests.start();
        String output = new String(python.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(python.waitFor(5, TimeUnit.MINUTES), "the supervisor's tests did not end");
        assertEquals(0, python.exitValue(), output);
        assertTrue(output.contains("\nOK"), output);
        if (output.contains("skipped")) {
            org.junit.jupiter.api.Assumptions.abort("a supervisor test was skipped:\n" + output);
        }
    }
}
