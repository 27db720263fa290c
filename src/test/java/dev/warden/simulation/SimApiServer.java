package dev.warden.simulation;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * The API server in lease mode, holding the one Lease: reads and writes with optimistic concurrency (a write states the
 * version it read; another's write in between makes it a conflict). It answers in milliseconds, or, as the hostile
 * makes it, slowly, not at all for a while (a stalled request is applied and answered when the stall ends, long after
 * its client gave up), or with an error.
 */
final class SimApiServer {

    /** The Lease as stored. */
    record Record(String holder, long version) {
    }

    private final Sim sim;
    private Record lease = new Record("", 0);
    private long stalledUntil;
    private long refusingUntil;
    private long slowUntil;
    private final List<Runnable> stalled = new ArrayList<>();
    /** When the Lease was last written. */
    long writtenAt;

    SimApiServer(Sim sim) {
        this.sim = sim;
    }

    /** A read: the Lease, to {@code answer}; null on an error. */
    void get(Consumer<Record> answer) {
        request(() -> answer.accept(lease), () -> answer.accept(null));
    }

    /** A write of {@code holder} ("" releases it) over the version read: whether it was taken, to {@code answer}. */
    void put(String holder, long readVersion, Consumer<Boolean> answer) {
        request(() -> {
            boolean taken = lease.version() == readVersion;
            if (taken) {
                lease = new Record(holder, lease.version() + 1);
                writtenAt = sim.now();
                sim.log(null, "the API server writes the Lease: " + (holder.isEmpty() ? "released" : "held by " + holder));
            }
            answer.accept(taken);
        }, () -> answer.accept(false));
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
