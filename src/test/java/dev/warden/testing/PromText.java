package dev.warden.testing;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Series read from a Prometheus text exposition ({@code /q/metrics}), for the tests to ask one value by its labels. */
public final class PromText {

    private static final Pattern SAMPLE = Pattern.compile("([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\\{(.*)})? (\\S+)");
    private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\",?");

    /** One sample: its name, its labels in order, its value. */
    public record Sample(String name, Map<String, String> labels, double value) {
    }

    private PromText() {
    }

    public static List<Sample> samples(String exposition) {
        List<Sample> samples = new ArrayList<>();
        for (String line : exposition.lines().toList()) {
            Matcher sample = SAMPLE.matcher(line);
            if (line.startsWith("#") || !sample.matches()) {
                continue;
            }
            Map<String, String> labels = new LinkedHashMap<>();
            if (sample.group(2) != null) {
                Matcher label = LABEL.matcher(sample.group(2));
                while (label.find()) {
                    labels.put(label.group(1), label.group(2));
                }
            }
            samples.add(new Sample(sample.group(1), labels, Double.parseDouble(sample.group(3).replace("Inf", "Infinity"))));
        }
        return samples;
    }

    /** The value of the one series named {@code name} whose labels include {@code labels}; empty when there is none. */
    public static OptionalDouble value(String exposition, String name, Map<String, String> labels) {
        List<Sample> matching = samples(exposition).stream()
                .filter(s -> s.name().equals(name) && s.labels().entrySet().containsAll(labels.entrySet())).toList();
        if (matching.size() > 1) {
            throw new AssertionError(matching.size() + " series " + name + labels + " in\n" + exposition);
        }
        return matching.isEmpty() ? OptionalDouble.empty() : OptionalDouble.of(matching.getFirst().value());
    }

    public static OptionalDouble value(String exposition, String name) {
        return value(exposition, name, Map.of());
    }
}
