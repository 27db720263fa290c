package dev.warden.gate;

import dev.warden.engine.ProcessInfo;
import dev.warden.engine.Signaller;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.jboss.logging.Logger;

/**
 * Stops the processes of this pod that hold lilbee's {@code server.lock} when this pod must not serve
 * (its warden lost the Lease) or must serve from the file at the path again (a reset replaced it):
 * SIGTERM, then SIGKILL after the grace. Only a process proven to hold an exclusive flock on the lock
 * through its own descriptor is handed in ({@link ServerLockHolders}), whatever its command line says,
 * and the signal reaches that very instance ({@link Signaller}).
 *
 * <p>Asked every round for the holders that must go: a stop under way is left to run, one that failed
 * (not permitted, or the process survived SIGKILL) is retried after {@link #RETRY}, and while one fails
 * {@link #problem()} says which and why, for the liveness probe: never a quiet "not signalled" while a
 * real holder remains.
 */
public final class LilbeeFence {

    private static final Logger LOG = Logger.getLogger(LilbeeFence.class);
    /** How soon a stop that failed is tried again: EPERM does not change by the round. */
    static final Duration RETRY = Duration.ofSeconds(5);

    private final Signaller signaller;
    private final Duration grace;
    private final Duration killTimeout;
    private final InstantSource clock;
    /** The stops started, by process instance; pruned to the holders of the last call. */
    private final Map<Instance, Attempt> attempts = new LinkedHashMap<>();

    private record Instance(long pid, long startTicks) {
        static Instance of(ProcessInfo process) {
            return new Instance(process.pid(), process.startTicks());
        }
    }

    private record Attempt(CompletableFuture<Signaller.Stop> stop, Instant at) {
        Optional<String> failure() {
            return stop.isDone() ? stop.join().problem() : Optional.empty();
        }
    }

    public LilbeeFence(Signaller signaller, Duration grace, Duration killTimeout) {
        this(signaller, grace, killTimeout, InstantSource.system());
    }

    LilbeeFence(Signaller signaller, Duration grace, Duration killTimeout, InstantSource clock) {
        this.signaller = signaller;
        this.grace = grace;
        this.killTimeout = killTimeout;
        this.clock = clock;
    }

    /** Stops each of {@code holders} not already being stopped; forgets earlier holders not among them. */
    public synchronized void fence(List<ProcessInfo> holders, String why) {
        Instant now = clock.instant();
        Map<Instance, ProcessInfo> wanted = new LinkedHashMap<>();
        holders.forEach(h -> wanted.put(Instance.of(h), h));
        attempts.keySet().retainAll(wanted.keySet());
        wanted.forEach((instance, process) -> {
            Attempt attempt = attempts.get(instance);
            if (attempt != null && (!attempt.stop().isDone() || Duration.between(attempt.at(), now).compareTo(RETRY) < 0)) {
                return;
            }
            if (attempt == null) {
                LOG.warnf("Fencing pid %d, which holds lilbee's server.lock in this pod (%s): SIGTERM, SIGKILL after %d ms",
                        process.pid(), why, grace.toMillis());
            }
            CompletableFuture<Signaller.Stop> stop = new CompletableFuture<>();
            Thread.ofPlatform().daemon().name("warden-fence-" + process.pid()).start(() -> {
                Signaller.Stop result = signaller.terminate(process, false, grace, killTimeout);
                result.problem().ifPresent(problem -> LOG.errorf("Could not fence pid %d, which still holds lilbee's"
                        + " server.lock: %s; retried every %d s, and liveness is DOWN meanwhile", process.pid(),
                        problem, RETRY.toSeconds()));
                stop.complete(result);
            });
            attempts.put(instance, new Attempt(stop, now));
        });
    }

    /** Forgets every holder: none is left to stop. */
    public void clear() {
        fence(List.of(), "");
    }

    /** Whether a stop is under way. */
    public synchronized boolean fencing() {
        return attempts.values().stream().anyMatch(a -> !a.stop().isDone());
    }

    /** A holder this fence failed to stop, and why; empty while every stop succeeded or runs. */
    public synchronized Optional<String> problem() {
        List<String> failures = new ArrayList<>();
        attempts.forEach((instance, attempt) -> attempt.failure().ifPresent(failures::add));
        return failures.isEmpty() ? Optional.empty() : Optional.of(String.join("; ", failures));
    }
}
