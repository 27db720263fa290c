package dev.warden.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.warden.testing.Command;
import dev.warden.testing.InteropTools;
import dev.warden.testing.PromText;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The chart's alerts through the real promtool (Prometheus's, built from its Go module by
 * {@code src/test/prometheus/build-promtool.sh}): {@code promtool check rules} on the PrometheusRule the real helm
 * renders, and {@code promtool test rules} with {@code src/test/prometheus/alerts-test.yaml}, where every alert is
 * seen firing and seen quiet. Runs with {@code -Pinterop -Dinterop.helm=HELM -Dinterop.promtool=PROMTOOL}.
 */
class AlertRulesInteropIT {

    private static final Path TESTS = Path.of("src/test/prometheus/alerts-test.yaml");

    /** The rules as the tests expect them: release w in namespace lilbee, every alert value at its default. */
    private static String rules() throws IOException, InterruptedException {
        // JSON is YAML: the PrometheusRule's spec is a Prometheus rule file as it stands.
        return new ObjectMapper().writeValueAsString(spec("lilbee"));
    }

    /** The spec of the PrometheusRule the real helm renders for release w in {@code namespace}. */
    static JsonNode spec(String namespace) throws IOException, InterruptedException {
        String rendered = Command.ok("", List.of(InteropTools.path("helm"), "template", "w", "helm/warden", "--namespace",
                namespace, "--set", "alerts.enabled=true", "--kube-version", PodChecks.KUBE_VERSION));
        return PodChecks.kind(PodChecks.objects(rendered), "PrometheusRule").path("spec");
    }

    /** The expression of {@code alert} as rendered for release w in {@code namespace}. */
    static String expression(String namespace, String alert) throws IOException, InterruptedException {
        for (JsonNode rule : spec(namespace).at("/groups/0/rules")) {
            if (rule.path("alert").asText().equals(alert)) {
                return rule.path("expr").asText();
            }
        }
        throw new AssertionError("no alert " + alert);
    }

    /**
     * {@code expr} evaluated by promtool over {@code scrapes} (each pod's /q/metrics, as Prometheus keeps it: warden's
     * series with the pod's namespace and name added), every value held for three minutes; the samples it gives at the
     * end, one per line as promtool's test file writes them, must be {@code expected}.
     */
    static Command.Run evaluate(Path dir, String namespace, Map<String, String> scrapes, String expr,
            Map<String, Double> expected) throws IOException, InterruptedException {
        StringBuilder test = new StringBuilder("rule_files: []\nevaluation_interval: 15s\ntests:\n  - interval: 15s\n"
                + "    input_series:\n");
        scrapes.forEach((pod, metrics) -> {
            for (PromText.Sample sample : PromText.samples(metrics)) {
                if (sample.name().startsWith("warden_")) {
                    Map<String, String> labels = new java.util.TreeMap<>(sample.labels());
                    labels.put("namespace", namespace);
                    labels.put("pod", pod);
                    String value = Double.isNaN(sample.value()) ? "NaN" : Double.isInfinite(sample.value()) ? (sample.value() > 0 ? "Inf" : "-Inf")
                            : Double.toString(sample.value());
                    test.append("      - series: ").append(quoted(sample.name() + labels(labels))).append('\n')
                            .append("        values: '").append(value).append("+0x12'\n");
                }
            }
        });
        test.append("    promql_expr_test:\n      - expr: ").append(quoted(expr)).append("\n        eval_time: 3m\n")
                .append("        exp_samples:").append(expected.isEmpty() ? " []\n" : "\n");
        expected.forEach((series, value) -> test.append("          - labels: ").append(quoted(series)).append('\n')
                .append("            value: ").append(value).append('\n'));
        Path file = Files.writeString(dir.resolve("evaluate-test.yaml"), test);
        return Command.run(null, List.of(InteropTools.path("promtool"), "test", "rules", file.toString()));
    }

    /** Prometheus's label set notation, values escaped. */
    static String labels(Map<String, String> labels) {
        return labels.entrySet().stream().map(e -> e.getKey() + "=\"" + e.getValue().replace("\\", "\\\\").replace("\"", "\\\"") + "\"")
                .collect(java.util.stream.Collectors.joining(", ", "{", "}"));
    }

    /** A YAML single-quoted scalar. */
    private static String quoted(String text) {
        return "'" + text.replace("'", "''") + "'";
    }

    private static Command.Run promtool(Path dir, String rules, String... args) throws IOException, InterruptedException {
        Files.writeString(dir.resolve("rules.yaml"), rules);
        Files.copy(TESTS, dir.resolve("alerts-test.yaml"));
        List<String> command = new ArrayList<>(List.of(InteropTools.path("promtool")));
        for (String arg : args) {
            command.add(arg.replace("DIR", dir.toString()));
        }
        return Command.run(null, command);
    }

    @Test
    void promtoolFindsTheRulesValid(@TempDir Path dir) throws Exception {
        Command.Run check = promtool(dir, rules(), "check", "rules", "DIR/rules.yaml");
        assertEquals(0, check.exitCode(), check.output());
        assertTrue(check.output().contains("SUCCESS: " + alerts(new ObjectMapper().readTree(rules())).size() + " rules found"),
                check.output());
    }

    @Test
    void everyAlertFiresWhenItShouldAndNotOtherwise(@TempDir Path dir) throws Exception {
        Command.Run test = promtool(dir, rules(), "test", "rules", "DIR/alerts-test.yaml");
        assertEquals(0, test.exitCode(), test.output());
        assertTrue(test.output().contains("SUCCESS"), test.output());

        // Every alert is tested both ways: a case where it fires and one where it stays quiet.
        JsonNode cases = new YAMLMapper().readTree(TESTS.toFile()).path("tests");
        Set<String> fired = new TreeSet<>();
        Set<String> quiet = new TreeSet<>();
        for (JsonNode testCase : cases) {
            for (JsonNode expected : testCase.path("alert_rule_test")) {
                (expected.path("exp_alerts").isEmpty() ? quiet : fired).add(expected.path("alertname").asText());
            }
        }
        Set<String> alerts = alerts(new ObjectMapper().readTree(rules()));
        assertEquals(alerts, fired, "every alert seen firing");
        assertEquals(alerts, quiet, "every alert seen quiet");
    }

    /**
     * The split-brain expression over two pods' scrapes, as KubeletInteropIT evaluates it over two isolated nodes' real
     * ones: both serving is one series of 2; one serving is none.
     */
    @Test
    void theSplitBrainExpressionCountsEveryPodsScrapeOfTheRelease(@TempDir Path dir) throws Exception {
        String expr = expression("lilbee", "WardenSplitBrain");
        String serving = "# HELP warden_serving x\n# TYPE warden_serving gauge\n"
                + "warden_serving{data_dir=\"/var/lib/lilbee/data\",release=\"w\"} 1.0\n"
                + "warden_engine_unused_limit_seconds{data_dir=\"/var/lib/lilbee/data\",release=\"w\"} NaN\n";
        Command.Run both = evaluate(dir, "lilbee", Map.of("w-warden-a", serving, "w-warden-b", serving), expr,
                Map.of("{namespace=\"lilbee\", release=\"w\", data_dir=\"/var/lib/lilbee/data\"}", 2.0));
        assertEquals(0, both.exitCode(), both.output());
        Command.Run one = evaluate(dir, "lilbee", Map.of("w-warden-a", serving, "w-warden-b", serving.replace("} 1.0", "} 0.0")),
                expr, Map.of());
        assertEquals(0, one.exitCode(), one.output());
        Command.Run wrong = evaluate(dir, "lilbee", Map.of("w-warden-a", serving), expr,
                Map.of("{namespace=\"lilbee\", release=\"w\", data_dir=\"/var/lib/lilbee/data\"}", 2.0));
        assertEquals(1, wrong.exitCode(), "the evaluation can fail: " + wrong.output());
    }

    /** The control: a rule changed so that it cannot fire where it must fails its test, so the tests above can fail. */
    @Test
    void aRuleThatNoLongerFiresFailsItsTest(@TempDir Path dir) throws Exception {
        String rules = rules();
        String broken = rules.replace("(warden_serving{namespace=\\\"lilbee\\\", release=\\\"w\\\"}) > 1",
                "(warden_serving{namespace=\\\"lilbee\\\", release=\\\"w\\\"}) > 2");
        assertNotEquals(rules, broken, "the split-brain rule's expression was found: " + rules);
        Command.Run test = promtool(dir, broken, "test", "rules", "DIR/alerts-test.yaml");
        assertEquals(1, test.exitCode(), test.output());
        assertTrue(test.output().contains("alertname: WardenSplitBrain"), test.output());
    }

    private static Set<String> alerts(JsonNode spec) {
        Set<String> names = new TreeSet<>();
        for (JsonNode group : spec.path("groups")) {
            StreamSupport.stream(group.path("rules").spliterator(), false).map(r -> r.path("alert").asText())
                    .forEach(names::add);
        }
        return names;
    }
}
