package dev.warden.simulation;

import dev.warden.gate.GateElection;
import dev.warden.gate.GateTimings;
import dev.warden.gate.LeaseRecord;
import dev.warden.gate.LeaseState;
import dev.warden.gate.Moment;
import java.time.Instant;
import java.util.Optional;

/**
 * A warden's Lease election in the simulation: {@link dev.warden.gate.LeaseElection}'s loop as client-go runs it (acquire
 * or renew every retry period, a little jittered while not leading; a leader that has not renewed within the renew
 * deadline steps down), each request cut off after a retry period, around warden's own {@link LeaseState} and its
 * decision of what to write ({@link LeaseRecord#next}: a Lease another holds is taken only once it has gone a Lease
 * duration unchanged as this warden observed it), whose every transition and decision is the real one.
 */
final class SimLease implements GateElection {

    private final Sim sim;
    private final SimWarden warden;
    private final SimApiServer api;
    private final String identity;
    private final GateTimings.Lease timings;
    private LeaseState state;
    private SimApiServer.Record observed;
    private long observedAt;
    private long lastRenewed;
    private long asideUntil;
    private long attempt;

    SimLease(Sim sim, SimWarden warden, SimApiServer api, String identity) {
        this.sim = sim;
        this.warden = warden;
        this.api = api;
        this.identity = identity;
        this.timings = sim.config.timings().lease().orElseThrow();
        this.state = LeaseState.initial(sim.moment());
    }

    void start() {
        state = state.began(sim.moment());
        tryAcquireOrRenew();
    }

    @Override
    public Optional<Moment> leadingUntil() {
        return state.leadingUntil(sim.moment(), timings.renewDeadline());
    }

    @Override
    public boolean decided() {
        return state.decided(sim.moment(), timings.retryPeriod());
    }

    @Override
    public String name() {
        return "gate";
    }

    @Override
    public String identity() {
        return identity;
    }

    @Override
    public Optional<String> holder() {
        return state.holder();
    }

    @Override
    public Optional<java.time.Duration> stalled(java.time.Duration patience) {
        return Optional.empty();
    }

    /** Stops contending: as the keeper's last step, releasing the Lease only when told it may. */
    @Override
    public void close(boolean letGo) {
        if (letGo) {
            release();
        }
    }

    private long nanos(java.time.Duration d) {
        return d.toNanos();
    }

    private void tryAcquireOrRenew() {
        long now = sim.now();
        long retry = nanos(timings.retryPeriod());
        if (now < asideUntil) {
            sim.at(asideUntil - now, warden.proc, "back in the election", this::tryAcquireOrRenew);
            return;
        }
        if (state.leading() && now - lastRenewed >= nanos(timings.renewDeadline())) {
            state = state.stoppedLeading();
            sim.log(warden.proc, "steps down: no renewal within the renew deadline");
        }
        long mine = ++attempt;
        state = state.asked(sim.moment());
        api.get(record -> answered(mine, now, record));
        long next = state.leading() ? retry : (long) (retry * (1 + 0.2 * sim.random.nextDouble()));
        sim.at(next, warden.proc, "Lease attempt", this::tryAcquireOrRenew);
    }

    /** A read answered (null: an error), or too late: a request is cut off after a retry period. */
    private void answered(long which, long sent, SimApiServer.Record record) {
        if (!warden.proc.alive || which != attempt || sim.now() - sent > nanos(timings.retryPeriod())) {
            return;
        }
        if (record == null) {
            state = state.failed();
            return;
        }
        state = state.read(Optional.of(record.holder()).filter(h -> !h.isEmpty()), Optional.empty(), identity);
        if (!record.equals(observed)) {
            observed = record;
            observedAt = sim.now();
        }
        LeaseRecord lease = new LeaseRecord(Optional.of(record.holder()).filter(h -> !h.isEmpty()), Optional.of(timings.duration()),
                Optional.empty(), Optional.empty(), 0);
        if (lease.next(identity, timings.duration(), new Moment(observedAt), sim.moment(), Instant.EPOCH).isEmpty()) {
            if (state.leading()) {
                state = state.stoppedLeading();
            }
            state = state.newLeader(Optional.of(record.holder()));
            return;
        }
        long writeSent = sim.now();
        state = state.asked(sim.moment());
        Moment sentAt = sim.moment();
        api.put(identity, record.version(), taken -> {
            if (!warden.proc.alive || which != attempt || sim.now() - writeSent > nanos(timings.retryPeriod())) {
                return;
            }
            if (!taken) {
                state = state.failed();
                return;
            }
            state = state.accepted(identity, Optional.empty(), identity, sentAt);
            lastRenewed = writeSent;
            if (!state.leading()) {
                state = state.startedLeading(identity);
                sim.log(warden.proc, "holds the Lease");
            }
        });
    }

    /** Lets the Lease go and stays out for three retry periods. */
    @Override
    public void stepAside() {
        release();
        asideUntil = sim.now() + 3 * nanos(timings.retryPeriod());
        state = state.asideUntil(new Moment(asideUntil));
    }

    /** A leader's release, as the election sends it when it steps aside or stops. */
    void release() {
        if (state.leading() && observed != null) {
            api.put("", observed.version() + 1, taken -> { });
        }
        state = state.stoppedLeading();
        attempt++;
    }
}
