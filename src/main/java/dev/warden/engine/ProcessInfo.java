package dev.warden.engine;

import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * What /proc says of one process.
 *
 * @param sid its session: lilbee starts llama-swap as a session leader, and its llama-servers stay in
 *     that session even once llama-swap is gone
 * @param startTicks its start in clock ticks since boot, from the same read of {@code /proc/<pid>/stat}:
 *     with the pid, what tells this process from a later one that reuses the pid
 */
public record ProcessInfo(long pid, long ppid, long pgid, long sid, Optional<Instant> start, long startTicks,
        List<String> argv) {

    public ProcessInfo {
        argv = List.copyOf(argv);
    }

    /** Whether {@code other} is this very process: the same pid and the same start. */
    public boolean sameInstance(ProcessInfo other) {
        return other.pid == pid && other.startTicks == startTicks;
    }

    /** The base name of argv[0], which is what llama-swap and llama-server are known by. */
    public String name() {
        if (argv.isEmpty() || argv.get(0).isEmpty()) {
            return "";
        }
        Path name = Path.of(argv.get(0)).getFileName();
        return name == null ? "" : name.toString();
    }

    /** argv[0]'s base name is exactly {@code llama-swap}: a {@code llama-swap-exporter} is not one. */
    public boolean isLlamaSwap() {
        return name().equals("llama-swap");
    }

    public boolean isLlamaServer() {
        return name().equals("llama-server");
    }

    /** The port after {@code --port} (or in {@code --port=N}) on the command line. */
    public OptionalInt port() {
        for (int i = 0; i < argv.size(); i++) {
            String arg = argv.get(i);
            String value = null;
            if (arg.equals("--port") && i + 1 < argv.size()) {
                value = argv.get(i + 1);
            } else if (arg.startsWith("--port=")) {
                value = arg.substring("--port=".length());
            }
            if (value != null) {
                try {
                    return OptionalInt.of(Integer.parseInt(value));
                } catch (NumberFormatException e) {
                    return OptionalInt.empty();
                }
            }
        }
        return OptionalInt.empty();
    }
}
