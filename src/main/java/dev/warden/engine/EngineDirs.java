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

    /** The role of the machine slot; the others are {@code overflow} and {@code legacy}. */
    public static final String SLOT = "slot";

    /** One engine dir and why lilbee uses it ({@code slot}, {@code overflow} or {@code legacy}). */
    public record Entry(String role, EngineDir dir) {
        public boolean isSlot() {
            return SLOT.equals(role);
        }
    }

    public static EngineDirs of(Path slot, Path dataRoot, Path dataDir) {
        List<Entry> entries = new ArrayList<>();
        add(entries, SLOT, slot);
        add(entries, "overflow", dataRoot.resolve("data").resolve("engine"));
        add(entries, "legacy", dataDir);
        return new EngineDirs(List.copyOf(entries));
    }

    /** Only {@code dir}: for tests and tools that watch one dir. */
    public static EngineDirs only(EngineDir dir) {
        return new EngineDirs(List.of(new Entry(SLOT, dir)));
    }

    private static void add(List<Entry> entries, String role, Path dir) {
        if (entries.stream().noneMatch(e -> e.dir().root().equals(dir))) {
            entries.add(new Entry(role, new EngineDir(dir)));
        }
    }

    /**
     * The dirs a one-shot action looks in: the slot always (lilbee creates it with its first
     * engine), the others only where lilbee recorded an engine or a user, so no build lock file of
     * warden's lands in a data dir for nothing.
     */
    public List<Entry> inUse() {
        return entries.stream().filter(e -> e.isSlot() || e.dir().hasEngineFiles()).toList();
    }

    public EngineDir slot() {
        return entries.getFirst().dir();
    }
}
