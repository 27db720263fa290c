package dev.warden.engine;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * Tells a recorded engine from a stranger that inherited its pid. A mismatch means pid reuse,
 * and warden never signals it.
 */
public final class EngineIdentity {

    /**
     * How far the process's start time may stray from the recorded {@code created_at}: /proc
     * counts in clock ticks (10 ms) from a boot time rounded to the second.
     */
    private static final Duration START_TOLERANCE = Duration.ofSeconds(1);

    private final ProcessTable processes;
    private final long self = ProcessHandle.current().pid();

    public EngineIdentity(ProcessTable processes) {
        this.processes = processes;
    }

    public Identity of(EngineRecord record) {
        if (record.pid() <= 1) {
            return new Identity.Stranger("pid " + record.pid() + " is never signalled");
        }
        if (record.pid() == self) {
            return new Identity.Stranger("pid " + record.pid() + " is warden itself");
        }
        Optional<ProcessInfo> found = processes.info(record.pid());
        if (found.isEmpty()) {
            return new Identity.Gone();
        }
        ProcessInfo process = found.get();
        if (record.createdAt().isPresent() && process.start().isPresent()) {
            Instant recorded = Instant.ofEpochMilli(Math.round(record.createdAt().getAsDouble() * 1000));
            Duration apart = Duration.between(recorded, process.start().get()).abs();
            if (apart.compareTo(START_TOLERANCE) > 0) {
                return new Identity.Stranger("pid " + record.pid() + " started at " + process.start().get()
                        + " but the record says " + recorded + ": the pid was reused");
            }
        }
        if (!process.isLlamaSwap()) {
            return new Identity.Stranger("pid " + record.pid() + " runs '" + process.name() + "', not llama-swap");
        }
        return new Identity.Ours(process);
    }
}
