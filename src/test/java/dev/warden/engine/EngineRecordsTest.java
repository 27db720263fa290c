package dev.warden.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.warden.testing.Swapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EngineRecordsTest {

    @TempDir
    Path dir;

    private final EngineRecords records = new EngineRecords(new ObjectMapper());

    private List<EngineRecord> read() {
        return records.read(new EngineDir(dir));
    }

    @Test
    void everyFieldOfAFullRecordIsRead() throws Exception {
        Files.writeString(dir.resolve("llama-swap.state.co-tenant.42.json"), """
                {"pid": 4242, "pgid": 4240, "created_at": 1764460000.25, "name": "llama-swap",
                 "member_ports": [41001, 41002], "proxy_port": 41000, "launches": 3, "engine_pin": "abc"}""");
        EngineRecord record = read().getFirst();
        assertEquals("co-tenant", record.group());
        assertEquals(4242, record.pid());
        assertEquals(4240, record.pgid().getAsLong());
        assertEquals(1764460000.25, record.createdAt().getAsDouble());
        assertEquals(List.of(41001, 41002), record.memberPorts());
        assertEquals(OptionalInt.of(41000), record.proxyPort());
    }

    @Test
    void onlyThePidIsRequired() throws Exception {
        Files.writeString(dir.resolve("llama-swap.state.chat.1.json"), "{\"pid\": 77}");
        EngineRecord record = read().getFirst();
        assertEquals(77, record.pid());
        assertTrue(record.pgid().isEmpty() && record.createdAt().isEmpty() && record.proxyPort().isEmpty());
    }

    @Test
    void legacyNamesCount() throws Exception {
        Files.writeString(dir.resolve("llama-swap.state.json"), "{\"pid\": 5}");
        Files.writeString(dir.resolve("llama-swap.state.123.json"), "{\"pid\": 6}");
        assertEquals(List.of(6L, 5L), read().stream().map(EngineRecord::pid).toList());
        assertEquals(List.of("", ""), read().stream().map(EngineRecord::group).toList());
    }

    @Test
    void aRecordThatDoesNotParseIsSkippedAndKept() throws Exception {
        String[] bad = {"", "{", "[1]", "{\"pid\": \"12\"}", "{\"pid\": 1.5}", "{\"nopid\": 1}", "null"};
        for (int i = 0; i < bad.length; i++) {
            Files.writeString(dir.resolve("llama-swap.state.chat." + i + ".json"), bad[i]);
        }
        assertEquals(List.of(), read());
        for (int i = 0; i < bad.length; i++) {
            assertTrue(Files.exists(dir.resolve("llama-swap.state.chat." + i + ".json")), "a sibling's write may be in flight");
        }
    }

    @Test
    void eachFileThatIsNotARecordIsListedWithWhyForStatus() throws Exception {
        Files.writeString(dir.resolve("llama-swap.state.a.1.json"), "");
        Files.writeString(dir.resolve("llama-swap.state.b.2.json"), "{\"pid\": 12");
        Files.writeString(dir.resolve("llama-swap.state.c.3.json"), "{\"pid\": \"12; kill -9 -1\"}");
        Files.writeString(dir.resolve("llama-swap.state.d.4.json"), "{\"pid\": 1, \"x\": \"" + "a".repeat(1_100_000) + "\"}");
        Files.writeString(dir.resolve("llama-swap.state.e.5.json"), "{\"pid\": 5}");
        EngineRecords.Scan scan = records.scan(new EngineDir(dir));
        assertEquals(List.of(5L), scan.records().stream().map(EngineRecord::pid).toList());
        List<String> reasons = scan.unreadable().stream().map(u -> u.file().getFileName() + ": " + u.reason()).toList();
        assertEquals(4, reasons.size(), reasons.toString());
        assertEquals("llama-swap.state.a.1.json: empty", reasons.get(0));
        assertTrue(reasons.get(1).startsWith("llama-swap.state.b.2.json: not JSON (line 1, column "), reasons.get(1));
        assertEquals("llama-swap.state.c.3.json: no integer pid", reasons.get(2));
        assertTrue(reasons.get(3).startsWith("llama-swap.state.d.4.json: over the 1048576"), reasons.get(3));
    }

    /** A neighbour swaps a record for a link to a secret: nothing of the secret reaches a reason status serves. */
    @Test
    void aRecordSwappedForALinkIsNotFollowedAndNoReasonQuotesAFile() throws Exception {
        Path secret = Files.writeString(dir.getParent().resolve("token"), "s3cr3t-t0ken and more");
        Files.createSymbolicLink(dir.resolve("llama-swap.state.a.1.json"), secret);
        Files.writeString(dir.resolve("llama-swap.state.b.2.json"), "s3cr3t-t0ken {");
        EngineRecords.Scan scan = records.scan(new EngineDir(dir));
        assertEquals(List.of(), scan.records());
        for (EngineRecords.Unreadable bad : scan.unreadable()) {
            assertFalse(bad.reason().contains("s3cr3t"), bad.reason());
        }
    }

    @Test
    void aRecordSwappedForAFifoInALoopNeverBlocksAPass() throws Exception {
        // Finding 5: a FIFO swapped in between the listing and the open blocked the reaper in open() for good.
        try (Swapper neighbour = Swapper.start(dir, "llama-swap.state.a.1.json", "{\"pid\": 7}")) {
            assertTimeoutPreemptively(java.time.Duration.ofSeconds(60), () -> {
                // Until both outcomes were seen often: the race was run, not just the loop.
                int[] seen = new int[2];
                while (seen[0] < 300 || seen[1] < 300) {
                    List<EngineRecord> found = read();
                    found.forEach(record -> assertEquals(7, record.pid()));
                    seen[found.size()]++;
                }
            });
        }
    }

    @Test
    void aNeighbourMakingBadRecordsInBulkCannotFloodTheLogYetEachIsNamedOnce() throws Exception {
        java.util.List<String> warnings = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Handler capture = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord record) {
                warnings.add(record.getMessage());
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        java.util.logging.Logger logger = java.util.logging.Logger.getLogger(EngineRecords.class.getName());
        logger.addHandler(capture);
        try {
            java.nio.file.attribute.FileTime old = java.nio.file.attribute.FileTime.from(java.time.Instant.now().minusSeconds(60));
            for (int i = 0; i < 30; i++) {
                Files.setLastModifiedTime(Files.writeString(dir.resolve("llama-swap.state.g." + i + ".json"), "{"), old);
            }
            read();
            assertEquals(4, warnings.size(), "three by name and one count: " + warnings);
            assertTrue(warnings.getLast().contains("27 more files"), warnings.getLast());
            for (int pass = 1; pass < 10; pass++) {
                int before = warnings.size();
                read();
                assertTrue(warnings.size() - before <= 4, "at most three by name and one count a pass: " + warnings);
            }
            for (int i = 0; i < 30; i++) {
                String name = "llama-swap.state.g." + i + ".json ";
                assertEquals(1, warnings.stream().filter(w -> w.contains(name)).count(), "each file named once: " + name);
            }
            int before = warnings.size();
            // rewritten with the same fault: not news
            Files.setLastModifiedTime(Files.writeString(dir.resolve("llama-swap.state.g.1.json"), "{"), old);
            read();
            assertEquals(before, warnings.size(), "nothing new to say: " + warnings);
        } finally {
            logger.removeHandler(capture);
        }
    }

    @Test
    void writesInFlightAndOtherFilesAreInvisible() throws Exception {
        Files.writeString(dir.resolve(".llama-swap.state.chat.1.json.tmp"), "{\"pid\": 1}");
        Files.writeString(dir.resolve("llama-swap.state.chat.1.json.tmp"), "{\"pid\": 1}");
        Files.writeString(dir.resolve("llama-swap-chat.1.json"), "{\"pid\": 1}");
        Files.createDirectory(dir.resolve("llama-swap.state.dir.2.json"));
        assertEquals(List.of(), read());
    }

    @Test
    void hostileFieldsAreDroppedNotTrusted() throws Exception {
        Files.writeString(dir.resolve("llama-swap.state.chat.1.json"), """
                {"pid": 9, "pgid": "1", "created_at": "yesterday", "name": ["x"],
                 "member_ports": [-1, 0, 70000, "80", 8081, 1e20], "proxy_port": 99999}""");
        EngineRecord record = read().getFirst();
        assertTrue(record.pgid().isEmpty());
        assertTrue(record.createdAt().isEmpty());
        assertTrue(record.name().isEmpty());
        assertEquals(List.of(8081), record.memberPorts());
        assertTrue(record.proxyPort().isEmpty());
    }

    @Test
    void aHugeFileIsNotARecord() throws Exception {
        Files.writeString(dir.resolve("llama-swap.state.chat.1.json"), "{\"pid\": 1, \"x\": \"" + "a".repeat(1_100_000) + "\"}");
        assertEquals(List.of(), read());
        assertTrue(Files.exists(dir.resolve("llama-swap.state.chat.1.json")));
    }

    @Test
    void aMissingEngineDirHasNoRecords() {
        assertEquals(List.of(), records.read(new EngineDir(dir.resolve("absent"))));
    }
}
