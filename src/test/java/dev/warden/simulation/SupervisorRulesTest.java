package dev.warden.simulation;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The simulation's model of the supervisor's rules against src/test/python/supervisor_cases.json, the table the real
 * supervisor is held to as well (test_lilbee_supervisor.py): whatever the simulation proves, it proves of these rules.
 */
class SupervisorRulesTest {

    static final long MS = 1_000_000;

    @Test
    void everyCaseOfTheSharedTable() throws Exception {
        JsonNode table = new ObjectMapper().readTree(Path.of("src/test/python/supervisor_cases.json").toFile());
        assertTrue(table.path("cases").size() > 10);
        for (JsonNode c : table.path("cases")) {
            ObjectNode config = ((ObjectNode) table.path("config")).deepCopy();
            if (c.has("config")) {
                config.setAll((ObjectNode) c.get("config"));
            }
            SupervisorRules rules = new SupervisorRules(config.path("permit_ms").asLong() * MS, config.path("grace_ms").asLong() * MS,
                    config.path("first_pause_ms").asLong() * MS, config.path("max_pause_ms").asLong() * MS,
                    config.path("calm_ms").asLong() * MS, config.path("not_before_ms").asLong() * MS,
                    config.path("prepare").asBoolean(), config.path("spare").asBoolean(),
                    config.path("prepare_after_ms").asLong() * MS, 0);
            for (JsonNode step : c.path("steps")) {
                long at = step.get(0).asLong();
                String event = step.get(1).asText();
                long arg = step.get(2).isNull() ? 0 : step.get(2).asLong() * (event.equals("start") || event.equals("go") ? MS : 1);
                List<String> expected = new ArrayList<>();
                step.get(3).forEach(a -> expected.add(a.asText()));
                List<String> actions = rules.step(at * MS, event, arg).stream().map(SupervisorRules.Action::toString).toList();
                assertEquals(expected, actions, c.path("name").asText() + ", at " + at + " ms, " + event);
            }
        }
    }
}
