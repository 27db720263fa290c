package dev.warden.simulation;

import dev.warden.gate.GateTimings;
import dev.warden.gate.lease.LeaseElection;
import dev.warden.gate.lease.LeaseLoop;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Optional;

/**
 * A warden's Lease election in the simulation: the production {@link LeaseElection} (the gate reads its lead through it)
 * and its {@link LeaseLoop}, driven here as its own thread drives it on a machine: the loop's next step asked, its
 * waits kept on the simulation's clock (ended at once when it steps aside or stops), its requests sent to the simulated
 * API server, each cut off after a retry period (a late answer is dropped, as the API client drops it). Its wall clock
 * is the simulation's time from the epoch, its jitter the seed's.
 */
final class SimLease {

    private final Sim sim;
    private final SimWarden warden;
    private final SimApiServer api;
    final LeaseElection election;
    private final long requestTime;
    private LeaseLoop loop;
    /** Bumped by every turn scheduled: a wait's turn runs only if nothing scheduled one since. */
    private long turns;
    /** Bumped by every request sent: an answer counts only for the request in flight. */
    private long requests;
    private boolean awaiting;
    private boolean done;

    SimLease(Sim sim, SimWarden warden, SimApiServer api, String identity) {
        this.sim = sim;
        this.warden = warden;
        this.api = api;
        GateTimings.Lease timings = sim.config.timings().lease().orElseThrow();
        this.requestTime = timings.retryPeriod().toNanos();
        Clock wall = new Clock() {
            @Override
            public ZoneOffset getZone() {
                return ZoneOffset.UTC;
            }

            @Override
            public Clock withZone(java.time.ZoneId zone) {
                return this;
            }

            @Override
            public Instant instant() {
                return Instant.EPOCH.plusNanos(sim.clock(warden.proc.node));
            }
        };
        this.election = new LeaseElection(new LeaseElection.Settings("gate", Optional.empty(), identity, timings.duration(),
                timings.renewDeadline(), timings.retryPeriod()), () -> sim.moment(warden.proc.node), wall,
                sim.random::nextDouble);
    }

    void start() {
        loop = election.drivenBy("sim/gate", () -> {
            long turn = ++turns;
            sim.at(0, warden.proc, "the Lease loop woken", () -> turnIf(turn));
        });
        turn();
    }

    /** Whether the loop has ended (stopped, its release sent and answered where it was told to release). */
    boolean done() {
        return done;
    }

    private void turnIf(long turn) {
        if (turn == turns) {
            turn();
        }
    }

    private void turn() {
        if (!warden.proc.alive || awaiting || done) {
            return;
        }
        switch (loop.next(sim.moment(warden.proc.node))) {
            case LeaseLoop.Next.Done ended -> done = true;
            case LeaseLoop.Next.Wait wait -> {
                long turn = ++turns;
                sim.at(Math.max(0, wait.until().nanos() - sim.clock(warden.proc.node)), warden.proc, "Lease loop",
                        () -> turnIf(turn));
            }
            case LeaseLoop.Next.Ask ask -> {
                long request = ++requests;
                awaiting = true;
                // Read by the warden's process: not while it is stopped.
                api.serve(ask.request(), answer -> sim.at(0, warden.proc, "a Lease answer read", () -> answer(request, answer)));
                sim.at(requestTime, warden.proc, "a Lease request cut off",
                        () -> answer(request, new LeaseLoop.Answer.Unanswered("no answer within a retry period")));
            }
        }
    }

    private void answer(long request, LeaseLoop.Answer answer) {
        if (request != requests || !awaiting || !warden.proc.alive) {
            return;
        }
        awaiting = false;
        boolean leading = loop.state().leading();
        loop.answered(answer, sim.moment(warden.proc.node));
        if (loop.state().leading() != leading) {
            sim.log(warden.proc, leading ? "steps down from the Lease" : "holds the Lease");
        }
        turn();
    }
}
