package dev.warden.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Start times from a /proc of the test's making, where the boot time can be stepped as a clock step moves it. */
class ProcessTableTest {

    private static final long PID = 4242;
    private static final long START_TICKS = 123_456;

    @TempDir
    Path proc;

    private void boot(long btime) throws IOException {
        Files.writeString(proc.resolve("stat"), "cpu  1 2 3 4\ncpu0 1 2 3 4\nintr 0 0 0\nctxt 9\nbtime " + btime
                + "\nprocesses 7\n");
    }

    private void llamaSwap() throws IOException {
        Path dir = Files.createDirectories(proc.resolve(Long.toString(PID)));
        // fields 3 to 22 of proc_pid_stat(5): state, ppid, pgrp, session, ..., starttime
        Files.writeString(dir.resolve("stat"), PID + " (llama-swap) S 1 " + PID + " " + PID
                + " 0 -1 4194304 10 0 0 0 1 1 0 0 20 0 3 0 " + START_TICKS + " 1000 10\n");
        Files.writeString(dir.resolve("cmdline"), "llama-swap\0--listen\0127.0.0.1:9292\0");
        Files.writeString(dir.resolve("status"), "Name:\tllama-swap\nUid:\t1000\t1000\t1000\t1000\n");
    }

    /** The fake llama-swap's record, written by its UID, {@code createdAt} as lilbee writes it. */
    private static EngineRecord record(double createdAt) {
        return new EngineRecord(Path.of("llama-swap.state.chat.1.json"), "chat", PID, OptionalLong.empty(),
                OptionalDouble.of(createdAt), Optional.empty(), List.of(), OptionalInt.empty(), OptionalInt.of(1000));
    }

    @Test
    void aStartIsTheBootTimeOfNowPlusTheStartTicks() throws IOException {
        boot(1_700_000_000);
        llamaSwap();
        ProcessInfo info = new ProcessTable(proc).info(PID).orElseThrow();
        assertEquals(Optional.of(Instant.ofEpochSecond(1_700_000_000).plusMillis(START_TICKS * 10)), info.start());
        assertEquals(START_TICKS, info.startTicks());
    }

    @Test
    void aClockStepMovesTheStartAsItMovesWhatLilbeeRecords() throws IOException {
        boot(1_700_000_000);
        llamaSwap();
        ProcessTable table = new ProcessTable(proc);
        Instant before = table.info(PID).orElseThrow().start().orElseThrow();
        boot(1_700_000_022);
        ProcessInfo after = table.all().getFirst();
        assertEquals(before.plusSeconds(22), after.start().orElseThrow(), "the boot time is read again, not kept");

        // lilbee writes created_at after the step, from the stepped btime: the same process, ours
        double written = 1_700_000_022 + START_TICKS / 100.0;
        assertInstanceOf(Identity.Ours.class, new EngineIdentity(table, false).of(record(written)));
    }

    @Test
    void withoutABootTimeNoStartIsKnownAndNoRecordIsTakenForThePid() throws IOException {
        Files.writeString(proc.resolve("stat"), "cpu  1 2 3 4\n");
        llamaSwap();
        ProcessTable table = new ProcessTable(proc);
        ProcessInfo info = table.info(PID).orElseThrow();
        assertTrue(info.start().isEmpty());
        assertEquals(START_TICKS, info.startTicks(), "the ticks still tell this process from a later one");
        Identity.Stranger stranger = assertInstanceOf(Identity.Stranger.class,
                new EngineIdentity(table, false).of(record(1_700_001_234.56)));
        assertTrue(stranger.reason().contains("start time is unknown"), stranger.reason());
    }
}
