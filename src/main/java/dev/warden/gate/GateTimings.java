package dev.warden.gate;

import dev.warden.config.WardenConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Every timing the gate's safety rests on, with the inequalities between them: {@link #problems()} names each one
 * violated, both values and the fix, and {@code serve} refuses to start (exit 2) on any. The chart checks the same
 * inequalities from the same values ({@code warden.checkTimings}), and docs/modes.md has them as one table.
 *
 * @param settle how long a pod elected on a gate file it has not seen at the path for so long waits before its
 *     lilbee may start: a pod whose gate file was replaced may still run a lilbee on the old one
 * @param permit how long one permit lasts: lilbee's supervisor stops lilbee when warden has not renewed it by then
 * @param grace the supervisor's SIGTERM-to-SIGKILL grace
 * @param stallBound how soon the kubelet restarts a supervisor that stopped turning (its liveness probe: period
 *     times failures, plus its timeout and grace): the longest a lilbee outlives its permit when its supervisor
 *     is stalled
 * @param handoverAfter how long the elected pod may go without serving before it lets the gate go
 * @param lease the Lease's timings, in lease mode
 */
public record GateTimings(Duration settle, Duration permit, Duration grace, Duration stallBound, Duration handoverAfter,
        Optional<Lease> lease) {

    /**
     * A lilbee its supervisor started that holds no lock on the server.lock at the path after this long never will:
     * lilbee takes it within its start (seconds), or gives up after 15 s (its SERVER_LOCK_TIMEOUT) and exits 3.
     */
    public static final Duration LILBEE_START_BOUND = Duration.ofSeconds(30);

    /** The Lease's duration, renew deadline and retry period (client-go's names). */
    public record Lease(Duration duration, Duration renewDeadline, Duration retryPeriod) {
    }

    public static GateTimings of(WardenConfig.Gate gate) {
        WardenConfig.Gate.Supervisor supervisor = gate.supervisor();
        Optional<Lease> lease = gate.election() == WardenConfig.Gate.Election.LEASE
                ? Optional.of(new Lease(gate.lease().duration(), gate.lease().renewDeadline(), gate.lease().retryPeriod()))
                : Optional.empty();
        return new GateTimings(gate.settle(), supervisor.permit(), supervisor.grace(), supervisor.stallBound(),
                gate.handoverAfter(), lease);
    }

    /** The longest a lilbee outlives the end of its permit: its supervisor's grace, or the kubelet's restart of a stalled one. */
    public Duration overrun() {
        return grace.compareTo(stallBound) >= 0 ? grace : stallBound;
    }

    /**
     * How long a whole node may freeze (its kubelet with it) at the worst moment, its lilbee's permit about to end, and
     * no two lilbees serve: its supervisor stops lilbee that much late, with only the grace after (no kubelet restarts a
     * frozen container). In file election, before a pod elected on a replaced gate file has settled; in lease
     * election, before the Lease can pass.
     */
    public Duration pauseTolerance() {
        if (lease.isPresent()) {
            return lease.get().duration().minus(lease.get().renewDeadline()).minus(grace);
        }
        // On a volume whose locks stay on each node the gate lock's heartbeat waits out permit + overrun (and a beat).
        Duration settled = settle.minus(permit).minus(grace);
        Duration heartbeat = permit.plus(overrun()).minus(grace);
        return settled.compareTo(heartbeat) <= 0 ? settled : heartbeat;
    }

    /** Every inequality violated, with no margin against pauses required (see {@link #problems(Duration)}). */
    public List<String> problems() {
        return problems(Duration.ZERO);
    }

    /**
     * Every inequality violated, each a sentence naming both sides, their values and why; empty when all hold.
     *
     * @param pauseMargin how long a frozen node must be tolerated ({@link #pauseTolerance()})
     */
    public List<String> problems(Duration pauseMargin) {
        List<String> problems = new ArrayList<>();
        for (var positive : List.of(new Named("warden.gate.settle", settle), new Named("warden.gate.supervisor.permit", permit),
                new Named("warden.gate.supervisor.grace", grace), new Named("warden.gate.supervisor.stall-bound", stallBound),
                new Named("warden.gate.handover-after", handoverAfter))) {
            if (!positive.value().isPositive()) {
                problems.add(positive.name() + " is " + millis(positive.value()) + ": it must be longer than nothing");
            }
        }
        if (permit.plus(overrun()).compareTo(settle) >= 0) {
            problems.add("warden.gate.supervisor.permit (" + millis(permit) + ") plus the longer of warden.gate.supervisor.grace ("
                    + millis(grace) + ") and warden.gate.supervisor.stall-bound (" + millis(stallBound) + ") must be shorter than"
                    + " warden.gate.settle (" + millis(settle) + "): a pod whose gate file was replaced may run its lilbee that"
                    + " long after its warden last said it may, and another pod elected on the new file waits the settle first");
        }
        if (pauseTolerance().compareTo(pauseMargin) < 0) {
            problems.add(lease.isPresent()
                    ? "warden.gate.lease.duration (" + millis(lease.get().duration()) + ") less warden.gate.lease.renew-deadline ("
                            + millis(lease.get().renewDeadline()) + ") and warden.gate.supervisor.grace (" + millis(grace)
                            + ") leaves " + millis(pauseTolerance()) + ", less than warden.gate.pause-margin ("
                            + millis(pauseMargin) + "): a node frozen that long just before its lilbee's permit ends stops it"
                            + " after the Lease can pass. Lengthen the Lease's duration or shorten its renew deadline"
                    : "warden.gate.settle (" + millis(settle) + ") less warden.gate.supervisor.permit (" + millis(permit)
                            + ") and warden.gate.supervisor.grace (" + millis(grace) + "), or the permit and the overrun less"
                            + " the grace, leaves " + millis(pauseTolerance()) + ", less than warden.gate.pause-margin ("
                            + millis(pauseMargin) + "): a pod whose gate file was replaced, or whose lock another node's pod"
                            + " cannot see, its node frozen that long as its permit ends, stops its lilbee after another pod"
                            + " has taken over. Lengthen the settle (or the permit) to match");
        }
        lease.ifPresent(l -> {
            if (l.retryPeriod().compareTo(l.renewDeadline()) >= 0) {
                problems.add("warden.gate.lease.retry-period (" + millis(l.retryPeriod()) + ") must be shorter than"
                        + " warden.gate.lease.renew-deadline (" + millis(l.renewDeadline()) + "): a leader renews several times"
                        + " before its deadline");
            }
            if (l.renewDeadline().plus(overrun()).compareTo(l.duration()) >= 0) {
                problems.add("warden.gate.lease.renew-deadline (" + millis(l.renewDeadline()) + ") plus the longer of"
                        + " warden.gate.supervisor.grace (" + millis(grace) + ") and warden.gate.supervisor.stall-bound ("
                        + millis(stallBound) + ") must be shorter than warden.gate.lease.duration (" + millis(l.duration())
                        + "): a leader cut off from the API server must have its lilbee stopped before the Lease can pass"
                        + " to another pod");
            }
        });
        return problems;
    }

    private record Named(String name, Duration value) {
    }

    private static String millis(Duration duration) {
        return duration.toMillis() + " ms";
    }
}
