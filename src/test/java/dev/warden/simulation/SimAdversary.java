package dev.warden.simulation;

import java.util.List;
import java.util.Optional;
import java.util.Random;

/**
 * The faults that split a data dir before, as families the simulation plays with random timing, on top of each pod's
 * hostile neighbour's random faults (FoundationDB's "buggify": weight the dice towards the dangerous). Each is what a
 * neighbour in the serving pod and one in a standby pod can do together:
 * <ul>
 *   <li>a reset under the serving pod, its warden then killed or stopped, a standby's warden restarted (fresh), and
 *       decoys in the standby on the deleted server.lock or the new one (issue 21; this second);
 *   <li>server.lock renamed while the serving warden is stopped for a moment, then that warden killed (this issue's
 *       first);
 *   <li>in lease mode, an API server outage right after a renewal, the leader stopped near the end of its lead
 *       (issue 21's third);
 *   <li>the serving pod's warden killed while a neighbour binds its ports (this third);
 *   <li>a switchover (warden step-down, or the serving pod deleted gracefully), then its supervisor stalled, its warden
 *       killed (and the step-down asked again of the next), a reset (issue 37), or its stepping-down lilbee's
 *       descriptors taken and unlocked (issue 48);
 *   <li>the serving pod's warden killed, its supervisor stalled a moment as it greets the restarted one, or in lease
 *       mode a neighbour greeting that one first and it SIGTERMed as soon as it listens (issue 48);
 *   <li>the serving pod's health port taken while its supervisor restarts, then that supervisor stalled and the data
 *       dir reset under it (issue 48's third);
 *   <li>on a volume whose locks stay on each node, the serving pod's gate lock heartbeat forged as let go (issue 50);
 *   <li>a node frozen, every process of its pods and its kubelet, for up to the margin its election leaves (issue 50).
 * </ul>
 */
final class SimAdversary {

    private final Sim sim;
    /** The node freezes' own dice: every other draw of a seed stays what it was before nodes froze. */
    private final Random freezing;

    SimAdversary(Sim sim) {
        this.sim = sim;
        this.freezing = new Random(new java.util.SplittableRandom(sim.seed * 31 + 17).nextLong());
    }

    /** Now and then through the chaos, a node frozen (a VM paused): for up to the margin its election leaves. */
    void freezes() {
        sim.at(between(15 * Sim.SECOND, 60 * Sim.SECOND), null, "a node freezes", this::freezeANode);
    }

    private void freezeANode() {
        if (!sim.chaos) {
            return;
        }
        int node = freezing.nextInt(sim.config.nodes());
        long margin = frozenMargin(sim.config);
        long length = sim.mutated(Sim.Mutation.NODES_FROZEN_PAST_THE_MARGIN) ? margin + between(Sim.SECOND, 15 * Sim.SECOND)
                : between(100 * Sim.MS, margin);
        sim.log(null, "node " + node + " freezes for " + Sim.seconds(length) + ": every process of its pods, and its kubelet");
        for (SimPod pod : List.copyOf(sim.pods)) {
            if (pod.node == node && !pod.deleted) {
                pod.freeze(length);
            }
        }
        freezes();
    }

    /**
     * The longest a node may freeze, whatever the moment, with half a second to spare: the timings' pause tolerance
     * (docs/modes.md's table: a frozen leader, a pod whose gate file was replaced, or one whose lock another node's pod
     * cannot see, stops its lilbee that much late; on one node too, since the clock runs on through the freeze and every
     * settle has ended when it thaws).
     */
    static long frozenMargin(Sim.Config config) {
        return config.timings().pauseTolerance().toNanos() - 500 * Sim.MS - skewAllowance(config);
    }

    /**
     * What the clocks' skew takes of the pause tolerance: a wait on one node (the settle, the Lease's duration) against a
     * permit and its overrun on another, each off by the skew the other way (docs/modes.md).
     */
    static long skewAllowance(Sim.Config config) {
        var timings = config.timings();
        long longest = Math.max(timings.settle().toNanos(), timings.lease().map(l -> l.duration().toNanos()).orElse(0L));
        return (long) Math.ceil(2 * Math.min(config.skew(), Sim.MAX_SKEW) * longest);
    }

    private long between(long from, long to) {
        return from + (long) (freezing.nextDouble() * (to - from));
    }

    void next() {
        sim.at(sim.between(6 * Sim.SECOND, 24 * Sim.SECOND), null, "the adversary", this::act);
    }

    /**
     * On a volume whose locks stay on each node, a neighbour in a standby pod writes the serving pod's heartbeat as let
     * go, again and again for a while, so that a standby holding the gate lock on its own node reads it before the next
     * true beat.
     */
    private void forgeTheHeartbeat(SimPod serving, List<SimPod> others) {
        sim.log(null, "adversary: the heartbeat of " + serving.name + "'s gate lock forged as let go");
        SimPod forger = others.isEmpty() ? serving : others.get(sim.random.nextInt(others.size()));
        forger.hostile.forgeReleases(sim.between(Sim.SECOND, 5 * Sim.SECOND));
    }

    private void act() {
        if (!sim.chaos) {
            return;
        }
        Optional<SimPod> serving = sim.pods.stream().filter(SimPod::serving).findFirst();
        List<SimPod> others = sim.pods.stream().filter(p -> serving.map(s -> s != p).orElse(true)).toList();
        if (serving.isPresent()) {
            SimPod pod = serving.get();
            // On a volume whose locks stay on each node, a seventh: the gate lock's heartbeat forged as let go.
            int pick = sim.random.nextInt(sim.api.isPresent() ? 9 : sim.config.nodes() > 1 ? 7 : 6);
            if (sim.config.focus() == Sim.Focus.LEASE_HANDOVERS_KILLED) {
                pick = 3;
            }
            switch (pick) {
                case 0 -> resetUnder(pod, others);
                case 1 -> renameUnderAStoppedWarden(pod);
                case 2 -> squatWhileWardenIsDown(pod);
                case 3 -> switchoverThenTrouble(pod);
                case 4 -> restartWardenUnderALateSupervisor(pod);
                case 5 -> squatWhileTheSupervisorRestarts(pod);
                default -> {
                    if (sim.api.isPresent()) {
                        outageThenStopTheLeader(pod);
                    } else {
                        forgeTheHeartbeat(pod, others);
                    }
                }
            }
        }
        next();
    }

    private void resetUnder(SimPod pod, List<SimPod> others) {
        sim.log(null, "adversary: a reset under " + pod.name + ", its warden gone or stopped before it looks, a standby's"
                + " restarted");
        Kernel.Proc warden = pod.warden.proc;
        if (sim.chance(0.6)) {
            sim.die(warden, "SIGKILL by the adversary");
        } else {
            pod.hostile.stopForAWhile(warden, sim.between(Sim.SECOND, 12 * Sim.SECOND), true);
        }
        for (String file : sim.kernel.names()) {
            sim.kernel.unlink(file);
        }
        for (SimPod other : others) {
            if (sim.chance(0.7) && other.warden != null) {
                Kernel.Proc standby = other.warden.proc;
                sim.at(sim.between(0, 500 * Sim.MS), null, "a standby restarted", () -> sim.die(standby, "SIGKILL by the adversary"));
            }
            if (sim.chance(0.5)) {
                other.hostile.decoy(Sim.SERVER, true, sim.between(100 * Sim.MS, 20 * Sim.SECOND));
            }
            if (sim.chance(0.3)) {
                sim.at(sim.between(0, Sim.SECOND), null, "a decoy on the new file",
                        () -> other.hostile.decoy(Sim.SERVER, false, sim.between(100 * Sim.MS, 3 * Sim.SECOND)));
            }
        }
    }

    private void renameUnderAStoppedWarden(SimPod pod) {
        sim.log(null, "adversary: server.lock renamed while " + pod.name + "'s warden is stopped, then it is killed");
        Kernel.Proc warden = pod.warden.proc;
        sim.stop(warden);
        sim.at(sim.between(0, Sim.SECOND), null, "rename", () -> sim.kernel.rename(Sim.SERVER, Sim.SERVER + ".old-" + sim.now()));
        sim.at(sim.between(Sim.SECOND, 3 * Sim.SECOND), null, "then killed", () -> sim.die(warden, "SIGKILL after its stop"));
    }

    private void squatWhileWardenIsDown(SimPod pod) {
        sim.log(null, "adversary: " + pod.name + "'s warden killed while a neighbour binds its ports");
        pod.hostile.squatting = true;
        sim.die(pod.warden.proc, "SIGKILL by the adversary");
        sim.at(sim.between(2 * Sim.SECOND, 15 * Sim.SECOND), null, "squat ends", () -> pod.hostile.squatting = false);
    }

    /**
     * A switchover, then trouble in the pod handing over: asked to step down (an operator's, or its deletion, its supervisor
     * SIGTERMed first), and then its supervisor stalled, its warden killed, or the data dir reset under it.
     */
    private void switchoverThenTrouble(SimPod pod) {
        boolean deleted = sim.chance(0.5);
        sim.log(null, "adversary: " + pod.name + (deleted ? " deleted gracefully" : " asked to step down") + ", then trouble");
        Kernel.Proc warden = pod.warden.proc;
        Optional<Kernel.Proc> supervisor = Optional.ofNullable(pod.supervisor).map(s -> s.proc);
        if (deleted) {
            pod.deleteGracefully();
        } else {
            pod.warden.askStepDown();
        }
        int trouble = sim.config.focus() == Sim.Focus.LEASE_HANDOVERS_KILLED ? 1 : sim.random.nextInt(5);
        sim.at(sim.between(0, Sim.SECOND), null, "the trouble", () -> {
            switch (trouble) {
                case 0 -> supervisor.ifPresent(p -> pod.hostile.stopForAWhile(p, sim.between(Sim.SECOND, 8 * Sim.SECOND), true));
                case 1 -> {
                    sim.die(warden, "SIGKILL by the adversary, stepping down");
                    if (!deleted && sim.chance(0.5)) {
                        // The switchover asked again of the warden restarted in its place.
                        whenTheNextListens(pod, warden, sim.now() + 330 * Sim.SECOND, next -> sim.at(sim.between(5 * Sim.SECOND,
                                20 * Sim.SECOND), null, "the step-down asked again", next::askStepDown));
                    }
                }
                case 2 -> {
                    for (String file : sim.kernel.names()) {
                        sim.kernel.unlink(file);
                    }
                }
                case 3 -> pod.neighbour.steal();
                default -> {
                }
            }
        });
    }

    /**
     * The serving pod's warden killed; as its supervisor greets the restarted warden, the supervisor is stalled a while
     * (a loaded node): the warden's hello is read late.
     */
    private void restartWardenUnderALateSupervisor(SimPod pod) {
        boolean thenTerminated = sim.api.isPresent() && sim.chance(0.5);
        sim.log(null, "adversary: " + pod.name + "'s warden killed, " + (thenTerminated ? "a neighbour greets the next"
                + " first, and it is SIGTERMed as it listens (its liveness probe failed)" : "its supervisor stalled as it"
                + " greets the next"));
        Kernel.Proc killed = pod.warden.proc;
        sim.die(killed, "SIGKILL by the adversary");
        if (thenTerminated) {
            // A neighbour says hello to the next warden before the supervisor can: the supervisor reports nothing to it.
            pod.neighbour.speak(sim.between(5 * Sim.SECOND, 20 * Sim.SECOND), false);
            whenTheNextListens(pod, killed, sim.now() + 330 * Sim.SECOND, next -> sim.at(sim.between(0, Sim.SECOND), null,
                    "the restarted warden SIGTERMed", next::terminate));
        } else {
            // The kubelet restarts warden at once, or after its back-off: watched that long.
            stallOnGreeting(pod, sim.now() + 330 * Sim.SECOND);
        }
    }

    /** Once the warden restarted after {@code gone} listens (watched until {@code until}), {@code then} of it. */
    private void whenTheNextListens(SimPod pod, Kernel.Proc gone, long until, java.util.function.Consumer<SimWarden> then) {
        if (sim.now() > until || pod.deleted) {
            return;
        }
        SimWarden next = pod.warden;
        if (next != null && next.proc != gone && next.proc.alive && next.listening()) {
            then.accept(next);
            return;
        }
        sim.at(50 * Sim.MS, null, "watching for the restarted warden", () -> whenTheNextListens(pod, gone, until, then));
    }

    private void stallOnGreeting(SimPod pod, long until) {
        SimSupervisor supervisor = pod.supervisor;
        if (supervisor == null || !supervisor.proc.alive || sim.now() > until) {
            return;
        }
        if (supervisor.greeting()) {
            pod.hostile.stopForAWhile(supervisor.proc, sim.between(1200 * Sim.MS, 3 * Sim.SECOND), true);
            return;
        }
        sim.at(5 * Sim.MS, null, "watching the supervisor greet", () -> stallOnGreeting(pod, until));
    }

    /**
     * The serving pod's health port taken while its supervisor is restarted; once its lilbee serves again, that
     * supervisor stalled, and the data dir reset under it.
     */
    private void squatWhileTheSupervisorRestarts(SimPod pod) {
        if (pod.supervisor == null) {
            return;
        }
        sim.log(null, "adversary: " + pod.name + "'s health port taken as its supervisor restarts, then it stalls, and a reset");
        pod.hostile.squatting = true;
        sim.at(sim.between(90 * Sim.SECOND, 150 * Sim.SECOND), null, "squat ends", () -> pod.hostile.squatting = false);
        sim.die(pod.supervisor.proc, "SIGKILL by the adversary");
        stallOnceServing(pod, sim.now() + 90 * Sim.SECOND);
    }

    private void stallOnceServing(SimPod pod, long until) {
        if (sim.now() > until || pod.deleted) {
            return;
        }
        if (pod.supervisor != null && pod.supervisor.proc.alive && pod.serving() && pod.hostile.squatting) {
            pod.hostile.stopForAWhile(pod.supervisor.proc, sim.between(15 * Sim.SECOND, 30 * Sim.SECOND), true);
            sim.at(sim.between(0, Sim.SECOND), null, "the reset", () -> {
                for (String file : sim.kernel.names()) {
                    sim.kernel.unlink(file);
                }
            });
            return;
        }
        sim.at(100 * Sim.MS, null, "watching for lilbee serving again", () -> stallOnceServing(pod, until));
    }

    /**
     * The outage starts late in a renewal's period (the other wardens have read the renewal: their wait for the Lease
     * counts from it), lasts about as long as the Lease, and the leader is stopped shortly before its lead would end.
     */
    private void outageThenStopTheLeader(SimPod pod) {
        SimApiServer api = sim.api.orElseThrow();
        long period = 2 * Sim.SECOND;
        long delay = Math.floorMod(api.writtenAt + sim.between(1500 * Sim.MS, 1900 * Sim.MS) - sim.now(), period);
        sim.at(delay, null, "the outage", () -> {
            long lead = api.writtenAt + 10 * Sim.SECOND - sim.now();
            sim.log(null, "adversary: the API server out late in a renewal's period, then " + pod.name + "'s warden stopped"
                    + " near its lead's end");
            api.outage(sim.between(9 * Sim.SECOND, 14 * Sim.SECOND));
            Kernel.Proc warden = pod.warden.proc;
            sim.at(lead - sim.between(0, 500 * Sim.MS), null, "the leader stopped",
                    () -> pod.hostile.stopForAWhile(warden, sim.between(8 * Sim.SECOND, 20 * Sim.SECOND), true));
        });
    }
}
