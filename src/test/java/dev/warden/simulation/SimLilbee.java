package dev.warden.simulation;

import java.util.Optional;

/**
 * {@code lilbee serve} in the simulation, in the process its supervisor starts for it (a child of the supervisor's, in
 * lilbee's container, dumpable: warden reads its fdinfo, and any process of its UID may take its descriptors): started
 * cold, it imports for a second or three; prepared (the supervisor's {@code --prepare}, a warm standby), the same
 * imports are done before any permit, holding nothing, and on its {@link #go} only {@code serve}'s own start is left, a
 * tenth of a second to most of one. Then it takes server.lock as lilbee's filelock does (open or create the name, an
 * exclusive flock, asked again every 50 ms, for 15 s, then exit 3), and serves from then on, until it lets the lock go
 * itself or dies: a lock unlocked under it by a process that took its descriptor ends nothing of its serving. SIGTERM
 * ends it once its requests in flight are done, within two and a half seconds (past the supervisor's grace now and
 * then); a prepared one not yet told to go ends at once.
 */
final class SimLilbee {

    private static final long RETRY = 50 * Sim.MS;
    private static final long PATIENCE = 15 * Sim.SECOND;

    final Sim sim;
    final Kernel.Proc proc;
    private final SimSupervisor supervisor;
    long launched;
    private boolean imported;
    private boolean going;
    private Kernel.Ofd server;
    private long firstTry;
    private int code;

    private SimLilbee(Sim sim, SimSupervisor supervisor, String name) {
        this.sim = sim;
        this.supervisor = supervisor;
        this.proc = sim.kernel.spawn(supervisor.pod.node, supervisor.pod.name + "/" + name, supervisor.pod.name, "lilbee",
                supervisor.proc, true);
        sim.lilbees.add(this);
        proc.onDeath.add(() -> {
            sim.lilbees.remove(this);
            supervisor.lilbeeExited(this, code);
        });
        sim.at(sim.between(500 * Sim.MS, 3 * Sim.SECOND), proc, "lilbee imported", () -> {
            imported = true;
            if (going) {
                serve();
            }
        });
    }

    /** A lilbee started cold on a permit ({@code gate}: a descriptor of it too, only as a mutation gives it one). */
    static SimLilbee cold(Sim sim, SimSupervisor supervisor, Kernel.Ofd gate) {
        SimLilbee lilbee = new SimLilbee(sim, supervisor, "lilbee");
        lilbee.go(gate);
        return lilbee;
    }

    /** A prepared lilbee: its imports under way or done, holding nothing, until its go. */
    static SimLilbee prepared(Sim sim, SimSupervisor supervisor) {
        return new SimLilbee(sim, supervisor, "lilbee-prepared");
    }

    /** Runs lilbee's command in this process (holding a descriptor of {@code gate}, if one is given). */
    void go(Kernel.Ofd gate) {
        going = true;
        launched = sim.clock(proc.node);
        if (gate != null) {
            proc.take(gate);
        }
        if (imported) {
            sim.at(sim.between(100 * Sim.MS, 800 * Sim.MS), proc, "serve's own start", this::serve);
        }
    }

    private void serve() {
        firstTry = sim.clock(proc.node);
        take();
    }

    private void take() {
        if (sim.clock(proc.node) - firstTry > PATIENCE) {
            code = 3;
            sim.die(proc, "exits 3: server.lock held elsewhere for 15 s");
            return;
        }
        Kernel.Ofd ofd = sim.kernel.open(proc, Sim.SERVER, true).orElseThrow();
        if (sim.kernel.tryExclusive(ofd)) {
            server = ofd;
            sim.log(proc, "holds server.lock (" + ofd.inode + ") and serves");
            return;
        }
        proc.close(ofd);
        sim.at(RETRY, proc, "lilbee asks for server.lock again", this::take);
    }

    void terminate() {
        sim.at(0, proc, "SIGTERM", () -> {
            code = 143;
            if (!going) {
                sim.die(proc, "exits (SIGTERM, prepared)");
                return;
            }
            // Its requests in flight drain first: now and then longer than the supervisor's grace. Then serve lets
            // server.lock go, last thing, and the process takes a while more to exit (lilbee's own: 0.6 s here),
            // or dies holding it (a SIGKILL first).
            sim.at(sim.between(0, 2500 * Sim.MS), proc, "lilbee lets server.lock go", () -> {
                if (server != null) {
                    proc.close(server);
                    server = null;
                }
                sim.at(sim.between(0, 1500 * Sim.MS), proc, "lilbee exits", () -> sim.die(proc, "exits (SIGTERM)"));
            });
        });
    }

    /** Serving: it took server.lock and has not let it go (whether or not another process unlocked it since). */
    boolean serves() {
        return proc.alive && server != null;
    }

    boolean servesTheFileAtThePath() {
        return serves() && sim.kernel.at(Sim.SERVER).map(inode -> inode == server.inode).orElse(false);
    }

    /** Its descriptor of server.lock, while it serves: what a process that takes descriptors from it may unlock. */
    Optional<Kernel.Ofd> serverLock() {
        return serves() ? Optional.of(server) : Optional.empty();
    }

    String describe() {
        return proc + (proc.stopped ? " stopped" : "") + (serves() ? " serving on " + server.inode
                + (server.exclusive ? "" : " (its lock taken from under it)") : " not serving");
    }

    @Override
    public String toString() {
        return describe();
    }
}
