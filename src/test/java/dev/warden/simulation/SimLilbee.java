package dev.warden.simulation;

/**
 * {@code lilbee serve} in the simulation: started by its supervisor (inheriting the gate lock's descriptor when given
 * one), it imports for a second or three, then takes server.lock as lilbee's filelock does (open or create the name,
 * an exclusive flock, asked again every 50 ms, for 15 s, then exit 3) and holds it until it dies. SIGTERM ends it
 * once its requests in flight are done, within two and a half seconds (past the supervisor's grace now and then).
 */
final class SimLilbee {

    private static final long RETRY = 50 * Sim.MS;
    private static final long PATIENCE = 15 * Sim.SECOND;

    final Sim sim;
    final Kernel.Proc proc;
    final long launched;
    private Kernel.Ofd server;
    private long firstTry;
    private int code;

    SimLilbee(Sim sim, SimSupervisor supervisor, Kernel.Ofd gate) {
        this.sim = sim;
        this.proc = sim.kernel.spawn(supervisor.pod.node, supervisor.pod.name + "/lilbee");
        this.launched = sim.now();
        if (gate != null) {
            proc.take(gate);
        }
        sim.lilbees.add(this);
        proc.onDeath.add(() -> {
            sim.lilbees.remove(this);
            supervisor.lilbeeExited(this, code);
        });
        sim.at(sim.between(500 * Sim.MS, 3 * Sim.SECOND), proc, "lilbee imported", () -> {
            firstTry = sim.now();
            take();
        });
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
            // Its requests in flight drain first: now and then longer than the supervisor's grace.
            sim.at(sim.between(0, 2500 * Sim.MS), proc, "lilbee exits", () -> sim.die(proc, "exits (SIGTERM)"));
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
