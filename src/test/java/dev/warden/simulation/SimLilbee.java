package dev.warden.simulation;

/**
 * {@code lilbee serve} in the simulation, in the process its supervisor starts for it: started cold, it imports for a
 * second or three; prepared (the supervisor's {@code --prepare}, a warm standby), the same imports are done before any
 * permit, holding nothing, and on its {@link #go} (the gate lock's descriptor with it, when there is one) only
 * {@code serve}'s own start is left, a tenth of a second to most of one. Then it takes server.lock as lilbee's filelock
 * does (open or create the name, an exclusive flock, asked again every 50 ms, for 15 s, then exit 3) and holds it until
 * it dies. SIGTERM ends it once its requests in flight are done, within two and a half seconds (past the supervisor's
 * grace now and then); a prepared one not yet told to go ends at once.
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
        this.proc = sim.kernel.spawn(supervisor.pod.node, supervisor.pod.name + "/" + name);
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

    /** A lilbee started cold on a permit. */
    static SimLilbee cold(Sim sim, SimSupervisor supervisor, Kernel.Ofd gate) {
        SimLilbee lilbee = new SimLilbee(sim, supervisor, "lilbee");
        lilbee.go(gate);
        return lilbee;
    }

    /** A prepared lilbee: its imports under way or done, holding nothing, until its go. */
    static SimLilbee prepared(Sim sim, SimSupervisor supervisor) {
        return new SimLilbee(sim, supervisor, "lilbee-prepared");
    }

    /** Runs lilbee's command in this process, holding {@code gate} (none where the Lease alone elects). */
    void go(Kernel.Ofd gate) {
        going = true;
        launched = sim.now();
        if (gate != null) {
            proc.take(gate);
        }
        if (imported) {
            sim.at(sim.between(100 * Sim.MS, 800 * Sim.MS), proc, "serve's own start", this::serve);
        }
    }

    private void serve() {
        firstTry = sim.now();
        take();
    }

    private void take() {
        if (sim.now() - firstTry > PATIENCE) {
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

    boolean holdsServerLock() {
        return proc.alive && server != null && server.exclusive;
    }

    boolean holdsTheFileAtThePath() {
        return holdsServerLock() && sim.kernel.at(Sim.SERVER).map(inode -> inode == server.inode).orElse(false);
    }

    String describe() {
        return proc + (proc.stopped ? " stopped" : "") + (holdsServerLock() ? " on " + server.inode : " holding no server.lock");
    }

    @Override
    public String toString() {
        return describe();
    }
}
