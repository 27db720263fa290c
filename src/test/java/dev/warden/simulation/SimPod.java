package dev.warden.simulation;

import dev.warden.lock.Heartbeat;
import dev.warden.lock.LockReach;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * One pod of the Deployment: its warden (a native sidecar) and lilbee's container (the supervisor, and lilbee under
 * it), its switch directory (an emptyDir of the pod's, read-only in lilbee's container unless the run has a runtime
 * that ignores that), a kubelet that runs them as the chart says (the startup probe holds lilbee's container back until
 * warden is up; a container that dies is restarted with the kubelet's back-off; warden's liveness probe restarts a
 * warden that stops answering, the supervisor's restarts a supervisor that stops turning, and a container stopped is
 * SIGKILLed after its grace), and a hostile neighbour in lilbee's container that does what any process of it can do:
 * signal, rename, delete, lock, take descriptors from dumpable processes, speak the switch's protocol, and put a
 * socket of its own at the switch path.
 */
final class SimPod {

    /** The kubelet's CrashLoopBackOff: immediate, then 10 s doubling to 5 minutes; forgotten after 10 quiet minutes. */
    private static final long BACKOFF_FIRST = 10 * Sim.SECOND;
    private static final long BACKOFF_MAX = 300 * Sim.SECOND;
    private static final long BACKOFF_RESET = 600 * Sim.SECOND;

    final Sim sim;
    final String name;
    final int node;
    final Hostile hostile = new Hostile();
    final SimNeighbour neighbour;
    SimWarden warden;
    SimSupervisor supervisor;
    boolean deleted;
    private boolean lilbeeContainerStarted;
    private final Restarts wardenRestarts = new Restarts();
    private final Restarts lilbeeRestarts = new Restarts();
    private int wardenFailures;
    private int supervisorFailures;
    /** Until when its node is frozen (a VM paused): its kubelet acts on nothing meanwhile. */
    private long frozenUntil;

    /** One container's restarts, for its back-off. */
    private final class Restarts {
        int count;
        long startedAt;

        long delay() {
            if (sim.now() - startedAt >= BACKOFF_RESET) {
                count = 0;
            }
            long delay = count == 0 ? 0 : Math.min(BACKOFF_FIRST << Math.min(count - 1, 10), BACKOFF_MAX);
            count++;
            return delay;
        }
    }

    SimPod(Sim sim, String name, int node) {
        this.sim = sim;
        this.name = name;
        this.node = node;
        sim.kernel.switchDir(name, sim.config.switchWritable());
        this.neighbour = new SimNeighbour(sim, this);
    }

    void start() {
        sim.log(null, name + " created on node " + node);
        startWarden();
        startupProbe();
        wardenLiveness();
        supervisorLiveness();
        hostile.next();
        if (sim.chance(0.5)) {
            resident();
        }
    }

    /**
     * A neighbour of lilbee's container that speaks the switch's protocol for as long as the pod lives, the quiet
     * included (a compromised dependency does not go away when the faults stop): it speaks on the switch, asking warden
     * to step down every few seconds, or poses as warden at the switch path, again and again.
     */
    private void resident() {
        sim.at(sim.between(5 * Sim.SECOND, 30 * Sim.SECOND), null, name + " resident neighbour", () -> {
            if (deleted) {
                return;
            }
            if (sim.chance(0.7)) {
                neighbour.speak(sim.between(Sim.SECOND, 20 * Sim.SECOND), true);
            } else {
                neighbour.impersonate(sim.between(Sim.SECOND, 20 * Sim.SECOND));
            }
            resident();
        });
    }

    private void startWarden() {
        if (deleted || whenThawed(this::startWarden)) {
            return;
        }
        wardenRestarts.startedAt = sim.now();
        warden = new SimWarden(sim, this);
        warden.proc.onDeath.add(() -> {
            if (!deleted) {
                long delay = wardenRestarts.delay();
                sim.log(null, name + ": the kubelet restarts warden in " + Sim.seconds(delay));
                sim.at(delay, null, name + " restarts warden", this::startWarden);
            }
        });
        warden.start();
    }

    /** The startup probe, once a second: lilbee's container starts only once warden is up, the first time. */
    private void startupProbe() {
        if (deleted || lilbeeContainerStarted || whenThawed(this::startupProbe)) {
            return;
        }
        if (warden.proc.alive && !warden.proc.stopped && warden.listening()) {
            lilbeeContainerStarted = true;
            startLilbeeContainer();
            return;
        }
        sim.at(Sim.SECOND, null, name + " startup probe", this::startupProbe);
    }

    private void startLilbeeContainer() {
        if (deleted || whenThawed(this::startLilbeeContainer)) {
            return;
        }
        lilbeeRestarts.startedAt = sim.now();
        supervisor = new SimSupervisor(sim, this);
        SimSupervisor started = supervisor;
        supervisor.proc.onDeath.add(() -> {
            // lilbee (and the prepared one) die with the supervisor: the kernel's SIGKILL as it exits (PR_SET_PDEATHSIG).
            // Without it, the runtime kills what else the container runs a moment later.
            long after = sim.mutated(Sim.Mutation.LILBEE_OUTLIVES_ITS_SUPERVISOR) ? sim.between(Sim.MS, 300 * Sim.MS) : 0;
            started.lilbee().ifPresent(lilbee -> sim.at(after, null, "lilbee dies", () -> sim.die(lilbee.proc,
                    "killed with its supervisor")));
            started.prepared().ifPresent(prepared -> sim.die(prepared.proc, "killed with its supervisor"));
            if (!deleted) {
                long delay = lilbeeRestarts.delay();
                sim.log(null, name + ": the kubelet restarts lilbee's container in " + Sim.seconds(delay));
                sim.at(delay, null, name + " restarts lilbee's container", this::startLilbeeContainer);
            }
        });
        supervisor.start();
    }

    /** warden's liveness probe: every 10 s, 3 failures restart it (SIGTERM, SIGKILL after 5 s). */
    private void wardenLiveness() {
        if (deleted || whenThawed(this::wardenLiveness)) {
            return;
        }
        SimWarden probed = warden;
        if (probed.proc.alive && probed.proc.stopped) {
            if (++wardenFailures >= 3) {
                wardenFailures = 0;
                sim.log(probed.proc, "fails its liveness probe three times: restarted");
                probed.terminate();
                sim.atOn(node, 5 * Sim.SECOND, name + " warden's grace ends", () -> sim.die(probed.proc, "SIGKILL (grace over)"));
            }
        } else {
            wardenFailures = 0;
        }
        sim.atOn(node, 10 * Sim.SECOND, name + " warden liveness", this::wardenLiveness);
    }

    /**
     * The supervisor's liveness probe: from START_AFTER after its container starts, every second, 1 s to answer, 2
     * failures restart lilbee's container (grace 1 s).
     */
    private void supervisorLiveness() {
        if (deleted || whenThawed(this::supervisorLiveness)) {
            return;
        }
        SimSupervisor probed = supervisor;
        if (probed != null && sim.clock(node) - probed.startedAt < SimSupervisor.START_AFTER) {
            supervisorFailures = 0;
        } else if (probed != null && probed.proc.alive && probed.proc.stopped && !(probed.squatterAnswers && hostile.squatting)) {
            if (++supervisorFailures >= 2) {
                supervisorFailures = 0;
                sim.log(probed.proc, "fails its liveness probe twice: lilbee's container is restarted");
                probed.terminate();
                sim.atOn(node, Sim.SECOND + Sim.SECOND, name + " lilbee container's grace ends",
                        () -> sim.die(probed.proc, "SIGKILL (grace over)"));
            }
        } else {
            supervisorFailures = 0;
        }
        sim.atOn(node, Sim.SECOND, name + " supervisor liveness", this::supervisorLiveness);
    }

    /** True when its node is frozen: {@code kubeletAction} runs again once it thaws. */
    private boolean whenThawed(Runnable kubeletAction) {
        if (sim.now() >= frozenUntil) {
            return false;
        }
        sim.at(frozenUntil - sim.now(), null, name + "'s kubelet thaws", kubeletAction);
        return true;
    }

    /**
     * Its node frozen for {@code length} (a VM paused, a hypervisor's hiccup): every process of the pod stops, and its
     * kubelet with them (no probe fails, nothing is restarted); the monotonic clock runs on, as a paused guest's does.
     */
    void freeze(long length) {
        frozenUntil = Math.max(frozenUntil, sim.now() + length);
        sim.freeze(node, frozenUntil);
        List<Kernel.Proc> frozen = processes().stream().filter(p -> !p.stopped).toList();
        frozen.forEach(sim::stop);
        sim.at(length, null, name + " thaws", () -> frozen.forEach(sim::resume));
    }

    /** Force-deleted, its node lost: every process dies at once; the Deployment makes another pod. */
    void delete() {
        deleted = true;
        sim.log(null, name + " deleted: every process of it dies");
        for (var proc : processes()) {
            sim.die(proc, "killed with its pod");
        }
        hostile.undo();
        sim.pods.remove(this);
        sim.at(sim.between(Sim.SECOND, 5 * Sim.SECOND), null, "the Deployment replaces " + name, () -> sim.newPod(node));
    }

    /**
     * Deleted gracefully (a rollout, a drain, a scale-down): the kubelet SIGTERMs lilbee's container first (its supervisor
     * asks warden to step down), and warden, a native sidecar, once that has exited; whatever still runs when the grace
     * period (30 s) ends is killed. Nothing of it restarts; the Deployment makes another pod meanwhile.
     */
    void deleteGracefully() {
        deleted = true;
        sim.log(null, name + " deleted gracefully: SIGTERM to lilbee's container, then to warden");
        SimSupervisor terminated = supervisor;
        SimWarden sidecar = warden;
        Runnable thenWarden = () -> {
            if (sidecar != null) {
                sidecar.terminate();
            }
        };
        if (terminated != null && terminated.proc.alive) {
            terminated.proc.onDeath.add(thenWarden);
            terminated.terminate();
        } else {
            thenWarden.run();
        }
        sim.at(30 * Sim.SECOND, null, name + "'s grace period ends", () -> {
            for (var proc : processes()) {
                sim.die(proc, "SIGKILL (grace period over)");
            }
            hostile.undo();
            sim.pods.remove(this);
        });
        sim.at(sim.between(Sim.SECOND, 5 * Sim.SECOND), null, "the Deployment replaces " + name, () -> sim.newPod(node));
    }

    List<dev.warden.simulation.Kernel.Proc> processes() {
        List<Kernel.Proc> procs = new ArrayList<>();
        if (warden != null && warden.proc.alive) {
            procs.add(warden.proc);
        }
        if (supervisor != null && supervisor.proc.alive) {
            procs.add(supervisor.proc);
            supervisor.lilbee().filter(l -> l.proc.alive).ifPresent(l -> procs.add(l.proc));
            supervisor.prepared().ifPresent(l -> procs.add(l.proc));
        }
        procs.addAll(hostile.decoys.stream().filter(p -> p.alive).toList());
        return procs;
    }

    /** Serving: its warden says so, and its lilbee serves on the server.lock at the path. */
    boolean serving() {
        Optional<SimLilbee> lilbee = supervisor == null ? Optional.empty() : supervisor.lilbee();
        return warden != null && warden.proc.alive && warden.serving() && lilbee.isPresent() && lilbee.get().servesTheFileAtThePath();
    }

    /**
     * Whether it could serve if asked: not deleted, warden up, and lilbee's supervisor up and believing its own warden
     * (a supervisor that distrusts warden for good leaves the data dir one pod fewer to fail over to).
     */
    boolean ready() {
        return !deleted && warden != null && warden.proc.alive && warden.listening() && supervisor != null
                && supervisor.proc.alive && supervisor.believesItsWarden();
    }

    String describe() {
        return name + (deleted ? " (deleted)" : "") + ": warden " + (warden == null ? "none" : warden.describe())
                + ", lilbee " + (supervisor == null ? "container not started" : supervisor.describe());
    }

    /** What any process of the pod may do: signal any process of the pod, rename or delete any lock file, lock anything. */
    final class Hostile {
        final List<Kernel.Proc> decoys = new ArrayList<>();
        final List<Kernel.Proc> stopped = new ArrayList<>();
        boolean squatting;
        private int renamed;

        void next() {
            if (sim.config.meanFaultNanos() == 0) {
                return;
            }
            long wait = (long) (-Math.log(1 - sim.random.nextDouble()) * sim.config.meanFaultNanos() * sim.config.pods());
            sim.at(wait, null, name + " hostile", this::act);
        }

        private void act() {
            if (!sim.chaos || deleted) {
                return;
            }
            if (sim.config.focus() == Sim.Focus.CRASH_LOOPS && sim.chance(0.5)) {
                Optional.ofNullable(supervisor).map(s -> s.proc).filter(p -> p.alive)
                        .ifPresent(p -> sim.die(p, "SIGKILL by the neighbour (lilbee's container crash-looping)"));
                next();
                return;
            }
            if (sim.chance(0.2)) {
                int pick = sim.random.nextInt(3);
                switch (pick) {
                    case 0 -> neighbour.speak(sim.between(100 * Sim.MS, 20 * Sim.SECOND), sim.chance(0.5));
                    case 1 -> neighbour.impersonate(sim.between(100 * Sim.MS, 20 * Sim.SECOND));
                    default -> neighbour.steal();
                }
                next();
                return;
            }
            int pick = sim.random.nextInt(100);
            // Where the gate lock's heartbeat is what keeps a second pod out: file election, locks on each node.
            boolean nodeLocal = sim.api.isEmpty() && sim.config.nodes() > 1;
            List<Kernel.Proc> procs = processes();
            Kernel.Proc target = procs.isEmpty() ? null : procs.get(sim.random.nextInt(procs.size()));
            Optional<Kernel.Proc> ownWarden = Optional.ofNullable(warden).map(w -> w.proc).filter(p -> p.alive);
            Optional<Kernel.Proc> ownSupervisor = Optional.ofNullable(supervisor).map(s -> s.proc).filter(p -> p.alive);
            if (pick < 10 && target != null) {
                sim.die(target, "SIGKILL by the neighbour");
            } else if (pick < 20 && target != null) {
                stopForAWhile(target, sim.between(100 * Sim.MS, 15 * Sim.SECOND), sim.chance(0.7));
            } else if (pick < 24 && target != null) {
                terminate(target);
            } else if (pick < 30) {
                rename(sim.chance(0.6) ? Sim.SERVER : Sim.GATE);
            } else if (pick < 34) {
                renameBack();
            } else if (pick < 38) {
                unlink(nodeLocal && sim.chance(0.3) ? Sim.GATE + LockReach.SUFFIX : sim.chance(0.5) ? Sim.SERVER : Sim.GATE);
            } else if (pick < 40 && nodeLocal) {
                forgeARelease();
            } else if (pick < 44) {
                reset();
            } else if (pick < 52) {
                // What split a data dir before: a reset under this pod, its warden then gone or stopped a moment later.
                reset();
                ownWarden.ifPresent(w -> sim.at(sim.between(0, 300 * Sim.MS), null, "the warden after the reset", () -> {
                    if (sim.chance(0.5)) {
                        sim.die(w, "SIGKILL by the neighbour, just after a reset");
                    } else {
                        stopForAWhile(w, sim.between(Sim.SECOND, 12 * Sim.SECOND), true);
                    }
                }));
            } else if (pick < 58) {
                // A fresh warden: killed, the kubelet restarts it.
                ownWarden.ifPresent(w -> sim.die(w, "SIGKILL by the neighbour"));
            } else if (pick < 63) {
                // Its supervisor stalled first, then its warden gone: nothing in the pod stops lilbee but the kubelet.
                ownSupervisor.ifPresent(p -> stopForAWhile(p, sim.between(Sim.SECOND, 8 * Sim.SECOND), true));
                ownWarden.ifPresent(w -> sim.at(sim.between(0, 2 * Sim.SECOND), null, "then warden", () -> sim.die(w,
                        "SIGKILL by the neighbour, its supervisor stopped")));
            } else if (pick < 66) {
                // server.lock renamed under a warden stopped for a moment.
                ownWarden.ifPresent(w -> stopForAWhile(w, sim.between(200 * Sim.MS, 3 * Sim.SECOND), true));
                rename(Sim.SERVER);
            } else if (pick < 75) {
                decoy(sim.chance(0.7) ? Sim.SERVER : Sim.GATE, sim.chance(0.4), sim.between(100 * Sim.MS, 20 * Sim.SECOND));
            } else if (pick < 80) {
                squatting = true;
                sim.log(null, name + ": a neighbour binds the pod's ports while they are free");
                sim.at(sim.between(Sim.SECOND, 20 * Sim.SECOND), null, "squat ends", () -> squatting = false);
            } else if (pick < 83) {
                sim.jumpWall(node, (sim.chance(0.5) ? 1 : -1) * sim.between(Sim.SECOND, 3600 * Sim.SECOND));
            } else if (pick < 85) {
                delete();
                return;
            } else if (pick < 93 && sim.api.isPresent()) {
                sim.api.get().fault();
                if (sim.chance(0.5)) {
                    // An outage, then the leader stopped around its lead's end: only its permit's end stops its lilbee.
                    ownWarden.ifPresent(w -> sim.at(sim.between(3 * Sim.SECOND, 9 * Sim.SECOND), null, "then warden",
                            () -> stopForAWhile(w, sim.between(5 * Sim.SECOND, 20 * Sim.SECOND), true)));
                }
            } else if (pick >= 93 && pick < 96) {
                deleteGracefully();
                return;
            } else if (pick >= 96 && pick < 99) {
                // An operator's switchover (warden step-down), whichever pod is asked.
                ownWarden.ifPresent(w -> warden.askStepDown());
            }
            next();
        }

        void stopForAWhile(Kernel.Proc target, long length, boolean thenContinue) {
            sim.stop(target);
            stopped.add(target);
            if (thenContinue) {
                sim.at(length, null, "SIGCONT", () -> sim.resume(target));
            }
        }

        private void reset() {
            sim.log(null, name + ": lilbee reset (the data dir emptied)");
            for (String file : sim.kernel.names()) {
                sim.kernel.unlink(file);
            }
        }

        private void terminate(Kernel.Proc target) {
            if (warden != null && target == warden.proc) {
                warden.terminate();
            } else if (supervisor != null && target == supervisor.proc) {
                supervisor.terminate();
            } else if (supervisor != null && supervisor.lilbee().map(l -> l.proc == target).orElse(false)) {
                supervisor.lilbee().get().terminate();
            } else if (supervisor != null && supervisor.prepared().map(l -> l.proc == target).orElse(false)) {
                supervisor.prepared().get().terminate();
            } else {
                sim.die(target, "SIGTERM");
            }
        }

        private void rename(String file) {
            String away = file + ".moved-" + ++renamed;
            if (sim.kernel.rename(file, away)) {
                sim.log(null, name + ": " + file + " renamed to " + away);
            }
        }

        private void renameBack() {
            List<String> moved = sim.kernel.names().stream().filter(n -> n.contains(".moved-")).sorted().toList();
            if (!moved.isEmpty()) {
                String from = moved.get(sim.random.nextInt(moved.size()));
                String to = from.substring(0, from.indexOf(".moved-"));
                sim.kernel.rename(from, to);
                sim.log(null, name + ": " + from + " renamed back over " + to);
            }
        }

        /**
         * A process of lilbee's container writes the gate lock's heartbeat as its holder would on letting go: the record a
         * standby on a mount the lock does not reach must not take for that holder's end.
         */
        /** {@link #forgeARelease} every tenth of a second for {@code lasting}: one lands before its holder's next beat. */
        void forgeReleases(long lasting) {
            long until = sim.now() + lasting;
            forgeARelease();
            if (sim.now() + 100 * Sim.MS < until) {
                sim.at(100 * Sim.MS, null, "the forger again", () -> forgeReleases(until - sim.now()));
            }
        }

        private void forgeARelease() {
            String file = Sim.GATE + LockReach.SUFFIX;
            Kernel.Proc forger = sim.kernel.spawnNeighbour(node, name + "/forger", name, null);
            Heartbeat forged = sim.kernel.at(file).flatMap(inode -> Heartbeat.parse(inode.content))
                    .map(h -> new Heartbeat(h.holder(), h.pod(), h.domain(), h.generation(), h.beat() + 1, true))
                    .orElse(new Heartbeat("forger:1", "forger", "node-" + node + ":0", 0, 0, true));
            sim.kernel.open(forger, file, true).ifPresent(ofd -> {
                ofd.inode.content = forged.bytes();
                sim.log(forger, "writes " + file + " as its holder would on letting go");
            });
            sim.die(forger, "done");
        }

        private void unlink(String file) {
            if (sim.kernel.unlink(file)) {
                sim.log(null, name + ": " + file + " deleted");
            }
        }

        /** A process of the pod that takes an exclusive flock on the file (and deletes it, if {@code thenDelete}). */
        void decoy(String file, boolean thenDelete, long holding) {
            Kernel.Proc decoy = sim.kernel.spawnNeighbour(node, name + "/decoy", name, null);
            decoys.add(decoy);
            sim.kernel.open(decoy, file, true).ifPresent(ofd -> {
                boolean locked = sim.kernel.tryExclusive(ofd);
                sim.log(decoy, (locked ? "holds " : "could not lock ") + file + (thenDelete && locked ? ", then deletes it" : ""));
                if (locked && thenDelete) {
                    sim.kernel.unlink(file);
                }
            });
            sim.at(holding, decoy, "decoy ends", () -> sim.die(decoy, "lets go"));
        }

        void undo() {
            for (Kernel.Proc proc : stopped) {
                sim.resume(proc);
            }
            stopped.clear();
            for (Kernel.Proc decoy : decoys) {
                sim.die(decoy, "decoy gone");
            }
            decoys.clear();
            squatting = false;
        }
    }
}
