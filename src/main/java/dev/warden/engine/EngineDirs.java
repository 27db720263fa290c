package dev.warden.engine;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Every engine dir lilbee may record a llama-swap fleet in for one data root, as
 * {@code lilbee engine stop} covers them: the machine slot every lilbee process scans first; the
 * data root's overflow dir, used when the slot holds a live incompatible engine or cannot lock;
 * and the data dir itself, where versions before the slot recorded their engines. The slot comes
 * first; a dir named twice is listed once.
 */
public record EngineDirs(List<Entry> entries) {

    /** One engine dir and why lilbee uses it ({@code slot}, {@code overflow} or {@code legacy}). */
    public record Entry(String role, EngineDir dir) {
    }

    public static EngineDirs of(Path slot, Path dataRoot, Path dataDir) {
        List<Entry> entries = new ArrayList<>();
        add(entries, "slot", slot);
        add(entries, "overflow", dataRoot.resolve("data").resolve("engine"));
        add(entries, "legacy", dataDir);
        return new EngineDirs(List.copyOf(entries));
    }

    /** Only {@code dir}: for tests and tools that watch one dir. */
    public static EngineDirs only(EngineDir dir) {
        return new EngineDirs(List.of(new Entry("slot", dir)));
    }

    private static void add(List<Entry> entries, String role, Path dir) {
        if (entries.stream().noneMatch(e -> e.dir().root().equals(dir))) {
            entries.add(new Entry(role, new EngineDir(dir)));
        }
    }

    public EngineDir slot() {
        return entries.getFirst().dir();
    }
}
