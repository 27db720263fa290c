package dev.warden.simulation;

import dev.warden.gate.lease.LeaseLoop;
import dev.warden.gate.lease.LeaseRecord;
import dev.warden.gate.lease.LeaseStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * The API server in lease mode, holding the one Lease (made by the chart: no holder, its duration): reads, and writes
 * with optimistic concurrency (a write names the version it read; another's write in between makes it a 409), as the
 * real one answers {@link dev.warden.gate.lease.ApiLeases}. It answers in milliseconds, or, as the hostile makes it, slowly,
 * not at all for a while (a stalled request is applied and answered when the stall ends, long after its client gave
 * up), or with an error.
 */
final class SimApiServer {

    private final Sim sim;
    private LeaseStore.Stored lease;
    private long version;
    private long stalledUntil;
    private long refusingUntil;
    private long slowUntil;
    private final List<Runnable> stalled = new ArrayList<>();
    /** When the Lease was last written. */
    long writtenAt;

    SimApiServer(Sim sim, Duration duration) {
        this.sim = sim;
        this.lease = new LeaseStore.Stored(new LeaseRecord(Optional.empty(), Optional.of(duration), Optional.empty(),
                Optional.empty(), 0), version);
    }

    /** {@code request} served, its answer to {@code answer}. */
    void serve(LeaseLoop.Request request, Consumer<LeaseLoop.Answer> answer) {
        request(() -> answer.accept(switch (request) {
            case LeaseLoop.Request.Get get -> new LeaseLoop.Answer.Lease(Optional.of(lease));
            // The chart makes the Lease, and warden's Role may not create one: the real API server says 403 or 409.
            case LeaseLoop.Request.Create create -> new LeaseLoop.Answer.Refused(new LeaseStore.Refused(409, "created",
                    "the Lease exists"));
            case LeaseLoop.Request.Update update -> write(update);
        }), () -> answer.accept(new LeaseLoop.Answer.Unanswered("the API server answered 503")));
    }

    private LeaseLoop.Answer write(LeaseLoop.Request.Update update) {
        if (!update.read().version().equals(lease.version())) {
            return new LeaseLoop.Answer.Refused(new LeaseStore.Refused(409, "written", "the Lease changed since it was read"));
        }
        lease = new LeaseStore.Stored(update.record(), ++version);
        writtenAt = sim.now();
        sim.log(null, "the API server writes the Lease: " + update.record().holder().map(h -> "held by " + h).orElse("released"));
        return new LeaseLoop.Answer.Lease(Optional.of(lease));
    }

    private void request(Runnable served, Runnable refused) {
        long now = sim.now();
        long latency = now < slowUntil ? sim.between(500 * Sim.MS, 1500 * Sim.MS) : sim.between(2 * Sim.MS, 40 * Sim.MS);
        if (now < refusingUntil) {
            sim.at(latency, null, "API error", refused);
        } else if (now < stalledUntil) {
            stalled.add(served);
        } else {
            sim.at(latency, null, "API answer", served);
        }
    }

    void fault() {
        long now = sim.now();
        int kind = sim.random.nextInt(3);
        long length = sim.between(Sim.SECOND, 20 * Sim.SECOND);
        if (kind == 0) {
            stalledUntil = Math.max(stalledUntil, now + length);
            sim.log(null, "the API server stalls for " + Sim.seconds(length));
            sim.at(length, null, "the stall ends", this::thaw);
        } else if (kind == 1) {
            refusingUntil = now + length;
            sim.log(null, "the API server refuses for " + Sim.seconds(length));
        } else {
            slowUntil = now + length;
            sim.log(null, "the API server answers slowly for " + Sim.seconds(length));
        }
    }

    /** Refuses every request for {@code length} (then answers again): an outage starting now. */
    void outage(long length) {
        refusingUntil = Math.max(refusingUntil, sim.now() + length);
        sim.log(null, "the API server refuses for " + Sim.seconds(length));
    }

    private void thaw() {
        if (sim.now() >= stalledUntil) {
            List<Runnable> waiting = List.copyOf(stalled);
            stalled.clear();
            for (Runnable request : waiting) {
                sim.at(sim.between(0, 50 * Sim.MS), null, "a stalled request answered", request);
            }
        }
    }

    void heal() {
        stalledUntil = 0;
        refusingUntil = 0;
        slowUntil = 0;
        thaw();
    }
}
