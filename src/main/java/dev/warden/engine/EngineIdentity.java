package dev.warden.engine;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.OptionalInt;

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
    /** Whether {@link #endpoint} proves who listens on a port: only worth its /proc reads with an API key to guard. */
    private final boolean verifyListeners;

    public EngineIdentity(ProcessTable processes) {
        this(processes, true);
    }

    /** @param verifyListeners false when no {@code warden.engine.api-key} is set: no endpoint is trusted then */
    public EngineIdentity(ProcessTable processes, boolean verifyListeners) {
        this.processes = processes;
        this.verifyListeners = verifyListeners;
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
        if (record.createdAt().isEmpty() || process.start().isEmpty()) {
            return new Identity.Stranger("pid " + record.pid() + " cannot be told from a reused pid: "
                    + (record.createdAt().isEmpty() ? "the record has no created_at" : "its start time is unknown"));
        }
        Instant recorded = recordedStart(record);
        if (Duration.between(recorded, process.start().get()).abs().compareTo(START_TOLERANCE) > 0) {
            return new Identity.Stranger("pid " + record.pid() + " started at " + process.start().get()
                    + " but the record says " + recorded + ": the pid was reused");
        }
        if (!process.isLlamaSwap()) {
            return new Identity.Stranger("pid " + record.pid() + " runs '" + process.name() + "', not llama-swap");
        }
        // lilbee writes the record as the user that runs its engine: a record of anyone else's would make
        // warden signal, on its writer's behalf, a process that writer could not signal itself.
        OptionalInt runsAs = processes.uid(record.pid());
        if (record.ownerUid().isEmpty() || runsAs.isEmpty() || record.ownerUid().getAsInt() != runsAs.getAsInt()) {
            return new Identity.Stranger("the record is owned by UID " + (record.ownerUid().isPresent()
                    ? record.ownerUid().getAsInt() : "(unknown)") + " but llama-swap pid " + record.pid() + " runs as UID "
                    + (runsAs.isPresent() ? runsAs.getAsInt() : "(unknown)") + ": only its own user's record counts");
        }
        return new Identity.Ours(process);
    }

    /**
     * Whether {@code process} is a llama-server that {@code record}'s llama-swap started: in the
     * session lilbee gave llama-swap (its pid), on a recorded member port, started after it. A
     * standalone llama-server, or one of another engine, is in another session.
     */
    public boolean startedBy(EngineRecord record, ProcessInfo process) {
        return record.createdAt().isPresent() && process.isLlamaServer() && process.sid() == record.pid()
                && process.port().isPresent() && record.memberPorts().contains(process.port().getAsInt())
                && process.start().isPresent()
                && !process.start().get().isBefore(recordedStart(record).minus(START_TOLERANCE));
    }

    /**
     * Where {@code record}'s llama-swap answers; trusted with the API key only when its pid is our
     * engine and is the very process listening on the recorded port (checked only when there is a key
     * to send, so a pass without one reads no /proc/net). Empty without a proxy port.
     */
    public Optional<EngineClient.Endpoint> endpoint(EngineRecord record) {
        if (record.proxyPort().isEmpty()) {
            return Optional.empty();
        }
        int port = record.proxyPort().getAsInt();
        boolean trusted = verifyListeners && of(record) instanceof Identity.Ours && processes.listensOn(record.pid(), port);
        return Optional.of(new EngineClient.Endpoint(EngineClient.loopback(port), trusted));
    }

    private static Instant recordedStart(EngineRecord record) {
        return Instant.ofEpochMilli(Math.round(record.createdAt().getAsDouble() * 1000));
    }
}
