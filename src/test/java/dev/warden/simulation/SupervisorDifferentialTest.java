package dev.warden.simulation;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.warden.testing.Peer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The simulation's model of the supervisor's rules and the supervisor's own (helm/warden/files/lilbee-supervisor.py,
 * its class Rules) against each other, beyond the shared table: {@value #TRACES} random traces of events (permits,
 * renewals, stops, exits, signals, time passing, with random timings and random settings, the warm path's among
 * them), each replayed through both, which must do the same at every step.
 */
class SupervisorDifferentialTest {

    private static final int TRACES = 3000;
    private static final long MS = 1_000_000;
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void theModelAndTheSupervisorDoTheSameOnRandomTraces() throws Exception {
        Peer.assumePython();
        Random random = new Random(51);
        ArrayNode traces = JSON.createArrayNode();
        List<List<String>> expected = new ArrayList<>();
        for (int t = 0; t < TRACES; t++) {
            ObjectNode config = config(random);
            SupervisorRules rules = new SupervisorRules(config.get("permit_ms").asLong() * MS, config.get("grace_ms").asLong() * MS,
                    config.get("first_pause_ms").asLong() * MS, config.get("max_pause_ms").asLong() * MS,
                    config.get("calm_ms").asLong() * MS, config.get("not_before_ms").asLong() * MS,
                    config.get("prepare").asBoolean(), config.get("spare").asBoolean(),
                    config.get("prepare_after_ms").asLong() * MS, 0);
            ArrayNode steps = JSON.createArrayNode();
            long now = 0;
            boolean signalled = false;
            for (int s = 10 + random.nextInt(50); s > 0; s--) {
                now += random.nextInt(4) == 0 ? 0 : random.nextLong(3000) * MS;
                String event;
                long arg = 0;
                int dice = random.nextInt(20);
                if (dice < 5) {
                    event = "start";
                    arg = now + (random.nextLong(9000) - 1000) * MS;
                } else if (dice < 9) {
                    event = "go";
                    arg = now + random.nextLong(9000) * MS;
                } else if (dice < 11) {
                    event = "stop";
                } else if (dice < 14 && rules.lilbee != SupervisorRules.Lilbee.NONE) {
                    // An exit is of the lilbee it started: none arrives while none runs.
                    event = "exited";
                    arg = List.of(0, 1, 3, 137, 143).get(random.nextInt(5));
                } else if (dice == 14 && !signalled && random.nextInt(4) == 0) {
                    event = "signal";
                    arg = random.nextBoolean() ? 15 : 2;
                    signalled = true;
                } else {
                    event = "tick";
                }
                List<String> actions = rules.step(now, event, arg).stream().map(SupervisorRules.Action::toString).toList();
                expected.add(actions);
                steps.add(JSON.createArrayNode().add(now).add(event).add(arg));
                if (actions.stream().anyMatch(a -> a.startsWith("exit:"))) {
                    break;
                }
            }
            traces.add(JSON.createObjectNode().<ObjectNode>set("config", config).set("steps", steps));
        }
        JsonNode replayed = replay(traces);
        int i = 0;
        for (int t = 0; t < TRACES; t++) {
            JsonNode trace = traces.get(t);
            JsonNode actions = replayed.get(t);
            for (int s = 0; s < trace.get("steps").size(); s++, i++) {
                List<String> python = new ArrayList<>();
                actions.get(s).forEach(a -> python.add(a.asText()));
                assertEquals(expected.get(i), python, "trace " + t + " " + trace.get("config") + ", step " + s + " "
                        + trace.get("steps").get(s) + " (the model's actions, then the supervisor's); its steps: "
                        + trace.get("steps"));
            }
        }
    }

    /** Settings as the chart and the table give them, and others: short and long permits, pauses, the warm path. */
    private static ObjectNode config(Random random) {
        ObjectNode config = JSON.createObjectNode();
        config.put("permit_ms", 1000 + random.nextInt(7000));
        config.put("grace_ms", 200 + random.nextInt(3000));
        config.put("first_pause_ms", random.nextBoolean() ? 1000 : 100 + random.nextInt(2000));
        config.put("max_pause_ms", 5000 + random.nextInt(30000));
        config.put("calm_ms", 1000 + random.nextInt(60000));
        config.put("not_before_ms", random.nextBoolean() ? 0 : random.nextInt(3000));
        config.put("prepare", random.nextBoolean());
        config.put("spare", random.nextBoolean());
        config.put("prepare_after_ms", random.nextBoolean() ? 0 : random.nextInt(4000));
        return config;
    }

    /** The supervisor's Rules on every trace, in one Python. */
    private static JsonNode replay(ArrayNode traces) throws Exception {
        ProcessBuilder builder = new ProcessBuilder("python3", "src/test/python/replay_rules.py");
        builder.environment().put("PYTHONDONTWRITEBYTECODE", "1");
        Process python = builder.start();
        try {
            try (var in = python.getOutputStream()) {
                in.write(JSON.writeValueAsBytes(traces));
            }
            byte[] out = python.getInputStream().readAllBytes();
            String err = new String(python.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
            assertEquals(true, python.waitFor(60, TimeUnit.SECONDS), "the replay did not end");
            assertEquals(0, python.exitValue(), err);
            return JSON.readTree(out);
        } finally {
            python.destroyForcibly();
        }
    }
}
