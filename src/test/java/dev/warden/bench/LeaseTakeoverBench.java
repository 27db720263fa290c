package dev.warden.bench;

import static dev.warden.bench.TakeoverBench.row;
import static dev.warden.bench.TakeoverBench.stats;

import dev.warden.testing.Await;
import dev.warden.testing.ControlPlane;
import dev.warden.testing.InteropTools;
import dev.warden.testing.LeaseWardens;
import dev.warden.testing.WardenProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Figure 8: gate mode's Lease election with client-go's timings (warden's defaults: a 15 s Lease,
 * 10 s renew deadline, 2 s retry) against a real kube-apiserver. Wardens on data roots of their own
 * (pods on different nodes); the leader is killed (SIGKILL: its Lease must expire) or stopped
 * (SIGTERM: it releases the Lease), or the API server is frozen (the leader must step down).
 */
class LeaseTakeoverBench {

    @TempDir
    Path dir;

    private ControlPlane plane;
    private LeaseWardens wardens;
    private int next;

    @AfterEach
    void stop() throws Exception {
        if (wardens != null) {
            wardens.close();
        }
        if (plane != null) {
            plane.close();
        }
    }

    private WardenProcess warden() throws Exception {
        WardenProcess warden = wardens.start("w" + next++);
        warden.awaitStatus("/q/health/live", 200);
        return warden;
    }

    private Optional<WardenProcess> started() {
        return wardens.theOneStarted();
    }

    /** Polls every 10 ms until exactly one warden other than {@code old} is started; the time since {@code from}. */
    private long untilAnotherStarted(WardenProcess old, long from) throws InterruptedException {
        while (true) {
            Optional<WardenProcess> leader = started();
            if (leader.isPresent() && leader.get() != old) {
                return (System.nanoTime() - from) / 1000;
            }
            if (System.nanoTime() - from > Duration.ofMinutes(2).toNanos()) {
                throw new AssertionError("no handover within 2 minutes");
            }
            Thread.sleep(10);
        }
    }

    @Test
    void leaseHandoverWithClientGosTimings() throws Exception {
        plane = ControlPlane.start(Path.of(InteropTools.path("control-plane")),
                Files.createTempDirectory("warden-lease-bench"));
        wardens = new LeaseWardens("bench-lease", plane.kubeconfig(), dir, List.of("-Dwarden.gate.lease.namespace=default"));
        int rounds = Integer.getInteger("warden.bench.lease-rounds", 8);
        warden();
        warden();
        Await.until("one warden is started", Duration.ofSeconds(60), () -> started().isPresent());
        long[] killed = new long[rounds];
        long[] stopped = new long[rounds];
        for (int i = 0; i < rounds; i++) {
            WardenProcess leader = started().orElseThrow();
            long at = System.nanoTime();
            leader.process().destroyForcibly();
            killed[i] = untilAnotherStarted(leader, at);
            wardens.forget(leader);
            warden();
            leader = started().orElseThrow();
            at = System.nanoTime();
            leader.process().destroy();
            stopped[i] = untilAnotherStarted(leader, at);
            leader.process().waitFor();
            wardens.forget(leader);
            warden();
        }
        long[] steppedDown = new long[Math.max(1, rounds / 2)];
        for (int i = 0; i < steppedDown.length; i++) {
            WardenProcess leader = started().orElseThrow();
            plane.pauseApiServer();
            long at = System.nanoTime();
            try {
                Await.until("the leader steps down", Duration.ofSeconds(60), () -> !leader.permits());
                steppedDown[i] = (System.nanoTime() - at) / 1000;
            } finally {
                plane.resumeApiServer();
            }
            Await.until("one warden is started again", Duration.ofSeconds(60), () -> started().isPresent());
        }
        Report.section("8. Lease election",
                "Gate mode with `warden.gate.election=lease` and warden's defaults, client-go's: a 15 s Lease, 10 s renew"
                        + " deadline, 2 s retry (a contender adds up to 1.2 retry periods of jitter). Wardens on data"
                        + " roots of their own (pods on different nodes, whose file locks do not meet) against a real"
                        + " kube-apiserver on loopback; one leader and one standby, a fresh standby after each round. Time"
                        + " from just before the event until the other warden's /q/health/started is 200 (polled every"
                        + " 10 ms), or, frozen API server (SIGSTOP), until the leader's is 503.",
                List.of("| event | median ms | p99 ms | min ms | max ms | rounds | bound |", "|---|---|---|---|---|---|---|"),
                List.of(row("leader SIGKILLed: its Lease expires, the standby takes it", stats(killed),
                                "Lease + a retry with jitter: < 19,400 ms"),
                        row("leader SIGTERMed: it releases the Lease on the way out", stats(stopped), "about a retry period"),
                        row("API server frozen: the leader steps down (and would fence its lilbee)", stats(steppedDown),
                                "the renew deadline after the last renewal sent (10,000 ms, so 8,000 to 10,050 after a freeze)")));
    }
}
