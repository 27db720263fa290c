package dev.warden.engine;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.warden.lock.CheckedDir;
import dev.warden.lock.Posix;
import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
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
    private static final int MAX_SIZE = 1024 * 1024;
    /** {@code llama-swap.state.<group>.<pid>.json}, {@code llama-swap.state.<pid>.json}, {@code llama-swap.state.json}. */
    private static final Pattern NAME = Pattern.compile("llama-swap\\.state(?:\\.(?:(.+)\\.)?(\\d+))?\\.json");
    private static final int MAX_PORT = 65535;

    /** A record younger than this that does not parse may be a write in flight: not reported yet. */
    private static final Duration IN_FLIGHT = Duration.ofSeconds(2);
    private static final int WARNINGS_PER_PASS = 3;

    private final ObjectMapper json;
    /** What was last reported about each unreadable record, so a pass a second does not repeat it. */
    private final Map<Path, String> reported = new ConcurrentHashMap<>();

    public EngineRecords(ObjectMapper json) {
        this.json = json;
    }

    /** A file named like a record that is not one, and why. */
    public record Unreadable(Path file, String reason) {
    }

    /** The records that parse, in file-name order, and the files that do not. */
    public record Scan(List<EngineRecord> records, List<Unreadable> unreadable) {
    }

    /**
     * The records that parse, in file-name order. A file that does not parse is left where it is
     * and reported once (again only if it changes), unless it may still be being written.
     */
    public List<EngineRecord> read(EngineDir dir) {
        Scan scan = scan(dir);
        report(scan.unreadable());
        return scan.records();
    }

    /** Reads every record file without logging: for status. */
    public Scan scan(EngineDir dir) {
        List<EngineRecord> records = new ArrayList<>();
        List<Unreadable> unreadable = new ArrayList<>();
        try (CheckedDir checked = CheckedDir.open(dir.root())) {
            for (Path file : dir.recordFiles(checked)) {
                Matcher name = NAME.matcher(file.getFileName().toString());
                if (name.matches()) {
                    Parsed parsed = parse(checked, file, name);
                    if (parsed.record() != null) {
                        records.add(parsed.record());
                    } else {
                        unreadable.add(parsed.unreadable());
                    }
                }
            }
        } catch (IOException e) {
            // no dir, or not the one resolved at start (a link now): no record in it is acted on
        }
        return new Scan(records, unreadable);
    }

    /**
     * Warns of each file that is not a record once, and again only if the reason changes; at most
     * {@link #WARNINGS_PER_PASS} by name in one pass and the rest counted, to be named in the passes
     * after: a neighbour who makes files by the thousand, or rewrites one every second, cannot flood
     * the log, and every file is still named once.
     */
    private void report(List<Unreadable> unreadable) {
        Map<Path, String> named = new HashMap<>();
        int told = 0;
        int untold = 0;
        for (Unreadable bad : unreadable) {
            try {
                FileTime modified = Files.getLastModifiedTime(bad.file(), LinkOption.NOFOLLOW_LINKS);
                if (modified.toInstant().plus(IN_FLIGHT).isAfter(Instant.now())) {
                    continue;
                }
            } catch (IOException e) {
                continue;
            }
            if (!bad.reason().equals(reported.get(bad.file()))) {
                if (told == WARNINGS_PER_PASS) {
                    untold++;
                    continue;
                }
                told++;
                LOG.warnf("Engine record %s is not a record (%s). warden leaves it in place and acts on no engine for"
                        + " it; lilbee replaces it when that engine starts again. Delete it if no llama-swap of that"
                        + " group runs.", bad.file(), bad.reason());
            }
            named.put(bad.file(), bad.reason());
        }
        if (untold > 0) {
            LOG.warnf("%d more files named like engine records are not records either: named a few a pass, and"
                    + " `warden status` lists them all.", untold);
        }
        reported.clear();
        reported.putAll(named);
    }

    /** Parses one record file, or says why it is not one. */
    private Parsed parse(CheckedDir dir, Path file, Matcher name) {
        JsonNode node;
        byte[] bytes;
        int owner;
        try {
            // Read from the checked dir, never through a link or a FIFO swapped in since the listing, capped.
            CheckedDir.Owned read = dir.readOwned(file.getFileName().toString(), MAX_SIZE);
            bytes = read.bytes();
            owner = read.uid();
            if (bytes.length > MAX_SIZE) {
                return Parsed.bad(file, "over the " + MAX_SIZE + " bytes a record can be");
            }
            if (bytes.length == 0) {
                return Parsed.bad(file, "empty");
            }
            node = json.readTree(bytes);
        } catch (JsonProcessingException e) {
            // Never the parser's message: it quotes the file's content, which status would serve to anyone.
            return Parsed.bad(file, "not JSON (line " + e.getLocation().getLineNr() + ", column "
                    + e.getLocation().getColumnNr() + ")");
        } catch (FileSystemException e) {
            return Parsed.bad(file, e.getReason() != null ? e.getReason() : "unreadable: " + e.getClass().getSimpleName());
        } catch (Posix.ErrnoException e) {
            // warden's own words and the kernel's: no byte of the file
            return Parsed.bad(file, "unreadable: " + e.getMessage());
        } catch (IOException | RuntimeException e) {
            return Parsed.bad(file, "unreadable: " + e.getClass().getSimpleName());
        }
        if (node == null || !node.isObject() || !node.path("pid").isIntegralNumber() || !node.path("pid").canConvertToLong()) {
            return Parsed.bad(file, "no integer pid");
        }
        String group = name.group(1) != null ? name.group(1) : "";
        List<Integer> memberPorts = new ArrayList<>();
        for (JsonNode port : node.path("member_ports")) {
            port(port).ifPresent(memberPorts::add);
        }
        JsonNode created = node.path("created_at");
        JsonNode recordName = node.path("name");
        return Parsed.good(new EngineRecord(file, group, node.get("pid").asLong(),
                node.path("pgid").isIntegralNumber() && node.path("pgid").canConvertToLong()
                        ? OptionalLong.of(node.get("pgid").asLong()) : OptionalLong.empty(),
                created.isNumber() && Double.isFinite(created.asDouble()) ? OptionalDouble.of(created.asDouble()) : OptionalDouble.empty(),
                recordName.isTextual() ? Optional.of(recordName.asText()) : Optional.empty(),
                memberPorts,
                port(node.path("proxy_port")).map(OptionalInt::of).orElse(OptionalInt.empty()), OptionalInt.of(owner)));
    }

    /** A parsed record or the reason there is none. */
    private record Parsed(EngineRecord record, Unreadable unreadable) {

        static Parsed good(EngineRecord record) {
            return new Parsed(record, null);
        }

        static Parsed bad(Path file, String reason) {
            return new Parsed(null, new Unreadable(file, reason));
        }
    }

    private static Optional<Integer> port(JsonNode node) {
        if (node.isIntegralNumber() && node.canConvertToInt() && node.asInt() > 0 && node.asInt() <= MAX_PORT) {
            return Optional.of(node.asInt());
        }
        return Optional.empty();
    }
}
