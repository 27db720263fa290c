package dev.warden.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jboss.logging.Logger;

/**
 * Reads engine records tolerantly. A record that does not parse is skipped and never deleted: it
 * may be a sibling's write in flight (they are written to a temp file and renamed, but a reader
 * must not bet on it).
 */
public final class EngineRecords {

    private static final Logger LOG = Logger.getLogger(EngineRecords.class);
    /** A record is a few hundred bytes; anything past this is not one and is not read whole. */
    private static final long MAX_SIZE = 1024 * 1024;
    /** {@code llama-swap.state.<group>.<pid>.json}, {@code llama-swap.state.<pid>.json}, {@code llama-swap.state.json}. */
    private static final Pattern NAME = Pattern.compile("llama-swap\\.state(?:\\.(?:(.+)\\.)?(\\d+))?\\.json");
    private static final int MAX_PORT = 65535;

    private final ObjectMapper json;

    public EngineRecords(ObjectMapper json) {
        this.json = json;
    }

    /** The records that parse, in file-name order. */
    public List<EngineRecord> read(EngineDir dir) {
        List<EngineRecord> records = new ArrayList<>();
        for (Path file : dir.recordFiles()) {
            parse(file).ifPresent(records::add);
        }
        return records;
    }

    Optional<EngineRecord> parse(Path file) {
        Matcher name = NAME.matcher(file.getFileName().toString());
        if (!name.matches()) {
            return Optional.empty();
        }
        JsonNode node;
        try {
            if (Files.size(file) > MAX_SIZE) {
                LOG.warnf("Skipping engine record %s: over %d bytes, not a record", file, MAX_SIZE);
                return Optional.empty();
            }
            node = json.readTree(Files.readAllBytes(file));
        } catch (IOException | RuntimeException e) {
            LOG.debugf("Skipping engine record %s for now: %s", file, e.getMessage());
            return Optional.empty();
        }
        if (node == null || !node.isObject() || !node.path("pid").isIntegralNumber() || !node.path("pid").canConvertToLong()) {
            LOG.debugf("Skipping engine record %s for now: no integer pid", file);
            return Optional.empty();
        }
        String group = name.group(1) != null ? name.group(1) : "";
        List<Integer> memberPorts = new ArrayList<>();
        for (JsonNode port : node.path("member_ports")) {
            port(port).ifPresent(memberPorts::add);
        }
        JsonNode created = node.path("created_at");
        JsonNode recordName = node.path("name");
        return Optional.of(new EngineRecord(file, group, node.get("pid").asLong(),
                node.path("pgid").isIntegralNumber() && node.path("pgid").canConvertToLong()
                        ? OptionalLong.of(node.get("pgid").asLong()) : OptionalLong.empty(),
                created.isNumber() && Double.isFinite(created.asDouble()) ? OptionalDouble.of(created.asDouble()) : OptionalDouble.empty(),
                recordName.isTextual() ? Optional.of(recordName.asText()) : Optional.empty(),
                memberPorts,
                port(node.path("proxy_port")).map(OptionalInt::of).orElse(OptionalInt.empty())));
    }

    private static Optional<Integer> port(JsonNode node) {
        if (node.isIntegralNumber() && node.canConvertToInt() && node.asInt() > 0 && node.asInt() <= MAX_PORT) {
            return Optional.of(node.asInt());
        }
        return Optional.empty();
    }
}
