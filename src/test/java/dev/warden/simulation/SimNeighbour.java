package dev.warden.simulation;

import dev.warden.lock.Posix;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A hostile process of lilbee's container that speaks the switch's protocol: what lilbee's own dependencies, its
 * engines or its crawler could do, as warden's UID, with lilbee's container's mounts. It connects to the pod's switch
 * and speaks as a supervisor would (first after a warden's restart, if it can), forging every word; it puts a socket of
 * its own at the switch path where lilbee's container may write there, and poses as warden; it takes descriptors from
 * every process of the pod that lets it ({@code pidfd_getfd}: the dumpable ones, lilbee and the prepared lilbee); and
 * every descriptor it is given or takes it keeps, and unlocks.
 */
final class SimNeighbour {

    private final Sim sim;
    private final SimPod pod;

    SimNeighbour(Sim sim, SimPod pod) {
        this.sim = sim;
        this.pod = pod;
    }

    /**
     * A process of lilbee's container: a child of the supervisor where one runs (lilbee's crawler, say), or, half the
     * time, of nothing in the pod (one exec'd into the container).
     */
    private Kernel.Proc spawn(String what) {
        Kernel.Proc parent = pod.supervisor != null && pod.supervisor.proc.alive && sim.chance(0.5) ? pod.supervisor.proc : null;
        return sim.kernel.spawnNeighbour(pod.node, pod.name + "/" + what, pod.name, parent);
    }

    /** Keeps {@code ofd}, a descriptor it was given or took, and most often unlocks it: the lock ends for every holder. */
    private void keep(Kernel.Proc proc, Kernel.Ofd ofd, String how) {
        boolean unlock = sim.chance(0.8);
        sim.log(proc, how + " a descriptor of " + ofd.inode + (unlock ? ", and unlocks it" : ", and keeps it"));
        if (unlock) {
            sim.kernel.unlock(ofd);
        }
    }

    /**
     * Connects to the pod's switch and speaks as a supervisor, forged: hello at once, a report that nothing runs and no
     * gate is held, a step-down (again every few seconds, if {@code flapping}), an answer to every stop; keeps any
     * descriptor it is sent. Tries again every 50 ms for two seconds if the switch does not take it (to be the first
     * after a warden's restart), then gives up; lives {@code lasting}.
     */
    void speak(long lasting, boolean flapping) {
        Kernel.Proc proc = spawn("speaker");
        sim.log(proc, "speaks on the switch as a supervisor would" + (flapping ? ", asking warden to step down again and again" : ""));
        sim.at(lasting, proc, "the speaker ends", () -> sim.die(proc, "ends"));
        tryToConnect(proc, sim.clock(pod.node) + 2 * Sim.SECOND, flapping);
    }

    private void tryToConnect(Kernel.Proc proc, long until, boolean flapping) {
        Kernel.Endpoint connection;
        try {
            connection = sim.kernel.connect(proc, sim.kernel.dir(proc, Kernel.SWITCH_DIR).orElseThrow(), "switch.sock");
        } catch (Posix.ErrnoException e) {
            if (sim.clock(pod.node) < until) {
                sim.at(50 * Sim.MS, proc, "the speaker tries again", () -> tryToConnect(proc, until, flapping));
            }
            return;
        }
        proc.install(connection);
        connection.onReadable = () -> sim.at(0, proc, "the speaker reads", () -> read(proc, connection, false));
        say(proc, connection, "hello 1 " + proc.pid + "\ngate none\nlilbee none\npermit 0\nwarm none\nstep-down");
        if (flapping) {
            flap(proc, connection);
        }
    }

    private void flap(Kernel.Proc proc, Kernel.Endpoint connection) {
        sim.at(sim.between(2 * Sim.SECOND, 4 * Sim.SECOND), proc, "the speaker asks again", () -> {
            if (!connection.closed) {
                say(proc, connection, "lilbee none\nstep-down");
                flap(proc, connection);
            }
        });
    }

    private void say(Kernel.Proc proc, Kernel.Endpoint connection, String lines) {
        try {
            connection.send((lines + "\n").getBytes(StandardCharsets.US_ASCII), null);
        } catch (Posix.ErrnoException e) {
            // refused, or warden gone: nothing more to say on it
        }
    }

    /** What it is told: every descriptor kept; a stop answered as done; as warden, a hello answered with its clock. */
    private void read(Kernel.Proc proc, Kernel.Endpoint connection, boolean asWarden) {
        while (proc.alive) {
            Kernel.Received got = connection.receive(proc, 4096);
            if (got == null || got.bytes().length == 0) {
                return;
            }
            for (Kernel.Ofd ofd : got.fds()) {
                keep(proc, ofd, asWarden ? "is given back" : "is sent");
            }
            for (String line : new String(got.bytes(), StandardCharsets.US_ASCII).split("\n")) {
                String[] words = line.split(" ");
                if (!asWarden && words[0].equals("stop") && words.length >= 2) {
                    say(proc, connection, "stopped " + words[1]);
                } else if (asWarden && words[0].equals("hello")) {
                    say(proc, connection, "hello 1 " + sim.clock(pod.node));
                }
            }
        }
    }

    /**
     * A socket of its own renamed over the switch path (refused where lilbee's container mounts it read-only), posing as
     * warden for {@code lasting}: every supervisor that connects is answered with the right clock and told it may
     * start, with a lock of its own on the gate file when it can take one, and go on.
     */
    void impersonate(long lasting) {
        Kernel.Proc proc = spawn("impostor");
        Kernel.Dir dir = sim.kernel.dir(proc, Kernel.SWITCH_DIR).orElseThrow();
        String name = ".impostor-" + proc.pid;
        Kernel.Listener listener;
        try {
            listener = sim.kernel.listen(proc, dir, name, 8);
            sim.kernel.write(proc, dir, "rename");
        } catch (Posix.ErrnoException e) {
            sim.log(proc, "cannot put a socket at the switch path: " + e.getMessage());
            sim.die(proc, "gives up");
            return;
        }
        proc.install(listener);
        sim.kernel.rename(dir, name, "switch.sock");
        sim.log(proc, "renamed a socket of its own over the switch path, posing as warden");
        Optional<Kernel.Ofd> gate = sim.kernel.open(proc, Sim.GATE, true).filter(sim.kernel::tryExclusive);
        List<Kernel.Endpoint> served = new ArrayList<>();
        sim.at(lasting, proc, "the impostor ends", () -> sim.die(proc, "ends"));
        pose(proc, listener, served, gate);
    }

    private void pose(Kernel.Proc proc, Kernel.Listener listener, List<Kernel.Endpoint> served, Optional<Kernel.Ofd> gate) {
        for (Kernel.Endpoint accepted = sim.kernel.accept(listener); accepted != null; accepted = sim.kernel.accept(listener)) {
            proc.install(accepted);
            served.add(accepted);
        }
        long until = sim.clock(pod.node) + 5 * Sim.SECOND;
        for (Kernel.Endpoint connection : served) {
            read(proc, connection, true);
            try {
                if (!connection.closed) {
                    connection.send(("start " + until + "\n").getBytes(StandardCharsets.US_ASCII), gate.orElse(null));
                    connection.send(("go " + until + "\n").getBytes(StandardCharsets.US_ASCII), null);
                }
            } catch (Posix.ErrnoException e) {
                // that supervisor left
            }
        }
        sim.at(500 * Sim.MS, proc, "the impostor poses", () -> pose(proc, listener, served, gate));
    }

    /**
     * {@code pidfd_getfd} on every process of the pod at once: every lock descriptor each holds (lilbee's server.lock,
     * and the gate lock wherever one is held) taken, kept and unlocked; refused by an undumpable process (warden, the
     * supervisor).
     */
    void steal() {
        List<Kernel.Proc> targets = new ArrayList<>();
        Optional.ofNullable(pod.warden).map(w -> w.proc).filter(p -> p.alive).ifPresent(targets::add);
        Optional.ofNullable(pod.supervisor).filter(s -> s.proc.alive).ifPresent(s -> {
            targets.add(s.proc);
            s.lilbee().ifPresent(l -> targets.add(l.proc));
        });
        Kernel.Proc thief = spawn("thief");
        for (Kernel.Proc target : targets) {
            for (Kernel.Ofd ofd : target.lockedOfds()) {
                if (sim.kernel.steal(thief, target, ofd).isPresent()) {
                    keep(thief, ofd, "takes from " + target);
                } else {
                    sim.log(thief, "pidfd_getfd on " + target + " refused: it is undumpable");
                }
            }
        }
        sim.at(sim.between(Sim.SECOND, 20 * Sim.SECOND), thief, "the thief ends", () -> sim.die(thief, "ends"));
    }
}
