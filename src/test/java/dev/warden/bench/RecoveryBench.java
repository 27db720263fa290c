package dev.warden.bench;

import static dev.warden.bench.TakeoverBench.stats;

import dev.warden.testing.Await;
import dev.warden.testing.GatePod;
import dev.warden.testing.LilbeeServe;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Figure 14: the data dir served again, per fault. Two gated pods of the real {@code lilbee serve} on one data root, as
 * figure 7 runs them (PID and network namespaces of their own, the test kubelet, the chart's settings), the standby past
 * its settle; one fault at a time in the serving pod, then the time until the data dir is served again, sampled every
 * few milliseconds: until a lilbee answers (it binds its port only once it holds server.lock), and until a pod is
 * Ready with it (the Service routes to it). A fault that never interrupts either counts 0. {@code
 * -Dwarden.bench.recovery-rounds} (3) rounds a fault; {@code -Dwarden.bench.recovery-logs=true} prints the pods' logs
 * after each, to see where the time goes.
 */
class RecoveryBench {

    private static final Duration PATIENCE = Duration.ofMinutes(4);
    /**
     * How long both must have held, and the least watched after a fault: past the chart's permit and grace (5 + 2 s), by
     * which a lilbee that lost its warden has been stopped.
     */
    private static final Duration STEADY = Duration.ofSeconds(8);
    /** The longest a sample may take and count: longer, the pod it waited on did not answer. */
    private static final Duration SAMPLE = Duration.ofMillis(250);
    /** Inside the defaults' pause tolerance (3 s, docs/modes.md), which a freeze within costs nothing but itself. */
    private static final Duration FREEZE = Duration.ofSeconds(2);

    /** The faults, each in the serving pod. */
    enum Fault {
        LILBEE_KILLED("lilbee SIGKILLed (its supervisor starts another, the gate stays)"),
        WARDEN_KILLED("warden SIGKILLed (the kubelet restarts it; its lilbee serves on its permit)"),
        STEP_DOWN("`warden step-down` (the standby takes over)"),
        NODE_FROZEN("every process of the pod stopped for " + FREEZE.toSeconds() + " s, then continued (a node's VM paused)"),
        RESET("the real `lilbee reset --yes` (from the gate file's deletion)"),
        RESET_THEN_WARDEN_KILLED("the real `lilbee reset --yes`, then the serving warden SIGKILLed (from the gate file's"
                + " deletion)", "the settle + 5 s (15,000)"),
        POD_LOST("the pod SIGKILLed whole (a node lost)");

        final String what;
        final String goal;

        Fault(String what) {
            this(what, "");
        }

        Fault(String what, String goal) {
            this.what = what;
            this.goal = goal;
        }
    }

    @TempDir
    Path dir;

    private final List<GatePod> pods = new CopyOnWriteArrayList<>();
    private Map<String, String> env;
    private int created;

    @AfterEach
    void stopPods() throws Exception {
        for (GatePod pod : pods) {
            pod.kill();
        }
    }

    @Test
    void theDataDirServedAgainAfterEachFault() throws Exception {
        GatePod.assumeRoot();
        LilbeeServe.command("lilbee");
        int rounds = Integer.getInteger("warden.bench.recovery-rounds", 3);
        boolean logs = Boolean.getBoolean("warden.bench.recovery-logs");
        env = LilbeeServe.environment(Files.createDirectories(dir.resolve("home")),
                Map.of("LILBEE_DATA", dir.resolve("root").toString()));
        pod();
        pod();
        List<String> rows = new ArrayList<>();
        for (Fault fault : Fault.values()) {
            long[] answering = new long[rounds];
            long[] ready = new long[rounds];
            for (int i = 0; i < rounds; i++) {
                GatePod serving = steady();
                Recovery recovery = inflict(fault, serving);
                answering[i] = recovery.answeringMicros;
                ready[i] = recovery.readyMicros;
                System.out.printf("RECOVERY %s round %d: a lilbee answers after %d ms, a Ready pod with it after %d ms%n",
                        fault, i + 1, recovery.answeringMicros / 1000, recovery.readyMicros / 1000);
                if (logs) {
                    pods.forEach(p -> System.out.println(p.logs()));
                }
                if (fault == Fault.POD_LOST) {
                    pods.remove(serving);
                    pod();
                }
            }
            long[] answers = stats(answering);
            long[] readies = stats(ready);
            rows.add(String.format(Locale.ROOT, "| %s | %.0f | %.0f | %.0f | %.0f | %d | %s |", fault.what,
                    TakeoverBench.pct(answers, 50), answers[rounds - 1] / 1000.0, TakeoverBench.pct(readies, 50),
                    readies[rounds - 1] / 1000.0, rounds, fault.goal));
        }
        Report.section("14. The data dir served again",
                "Two gated pods of the real `lilbee serve` 0.6.90b449 on one data root, as figure 7 runs them (PID and network"
                        + " namespaces of their own under the test kubelet, the chart's settings: permit 5 s, grace 2 s, settle"
                        + " 10 s), the standby past its settle. One fault at a time in the serving pod, then the time from the"
                        + " fault until the data dir is served again, sampled every few milliseconds: until a lilbee answers"
                        + " `/api/health` (it binds its port only once it holds server.lock), and until a pod is Ready with"
                        + " its lilbee answering (what a Service routes to); a sample not answered within "
                        + SAMPLE.toMillis() + " ms counts as down. A fault that interrupts neither counts 0; each is"
                        + " watched until it is done and both have held for " + STEADY.toSeconds() + " s (past the permit and"
                        + " grace).",
                List.of("| fault | a lilbee answers: median ms | max ms | a Ready pod with it: median ms | max ms | rounds | goal |",
                        "|---|---|---|---|---|---|---|"), rows);
    }

    private GatePod pod() throws Exception {
        GatePod pod = GatePod.gated("pod-" + ++created, env, GatePod.Kubelet.KUBERNETES);
        pods.add(pod);
        return pod;
    }

    /**
     * Once exactly one pod serves and the other stands by, past its settle (since it started, or since the gate file it
     * watches was made): the serving one.
     */
    private GatePod steady() throws Exception {
        GatePod serving = GatePod.theOneServing(pods, PATIENCE);
        GatePod standby = GatePod.other(pods, serving);
        Await.until("the standby stands by", PATIENCE, () -> standby.gateState().filter("standby"::equals).isPresent());
        // Role routing's group: a standby is routable once an election would let its lilbee start at once.
        Await.until("the standby past its settle", PATIENCE, () -> standby.probe("group/routable") == 200);
        return serving;
    }

    /** The fault, on a thread of its own (a kill waits for the pod's processes, a reset for lilbee), watched from its start. */
    private Recovery inflict(Fault fault, GatePod serving) throws Exception {
        java.util.concurrent.CompletableFuture<Void> done = new java.util.concurrent.CompletableFuture<>();
        // A reset is timed from the gate file's deletion: the file as it is before the fault starts.
        Optional<String> before = fault == Fault.RESET || fault == Fault.RESET_THEN_WARDEN_KILLED
                ? Optional.of(gateFile()) : Optional.empty();
        long at = System.nanoTime();
        Thread.ofPlatform().daemon().name("the fault").start(() -> {
            try {
                act(fault, serving);
                done.complete(null);
            } catch (Throwable e) {
                done.completeExceptionally(e);
            }
        });
        Recovery recovery = watch(at, done, before);
        done.get();
        return recovery;
    }

    /** The gate file's identity (an inode number may be reused at once: with its ctime), or "none". */
    private String gateFile() {
        try {
            Map<String, Object> file = Files.readAttributes(dir.resolve("root/data/warden-gate.lock"), "unix:ino,ctime");
            return file.get("ino") + "@" + file.get("ctime");
        } catch (java.io.IOException e) {
            return "none";
        }
    }

    private void act(Fault fault, GatePod serving) throws Exception {
        switch (fault) {
            case LILBEE_KILLED -> serving.lilbee().orElseThrow().destroyForcibly();
            case WARDEN_KILLED -> serving.warden().orElseThrow().destroyForcibly();
            case STEP_DOWN -> {
                String answer = serving.stepDown().orElseThrow(() -> new AssertionError("no answer to the step-down"));
                if (!answer.startsWith("200 ")) {
                    throw new AssertionError("the step-down was refused: " + answer);
                }
            }
            case NODE_FROZEN -> serving.freeze(FREEZE);
            case RESET, RESET_THEN_WARDEN_KILLED -> {
                dev.warden.testing.WardenProcess.Result reset = LilbeeServe.run(dir, env, "reset", "--yes");
                if (reset.exitCode() != 0) {
                    throw new AssertionError("lilbee reset: " + reset.stdout() + reset.stderr());
                }
                if (fault == Fault.RESET_THEN_WARDEN_KILLED) {
                    serving.warden().orElseThrow().destroyForcibly();
                }
            }
            case POD_LOST -> serving.kill();
        }
    }

    /**
     * From {@code at}, a sample every few milliseconds, until the fault is done and both have held for {@link #STEADY}
     * since: the end of the last moment each did not, counted from {@code at} or, for a reset, from the first sample
     * that finds the gate file deleted or replaced ({@code before}: its identity before the fault): the command's own
     * start is lilbee's, not the fault. A sample answered later than {@link #SAMPLE} counts as one that was not (a probe
     * sent into a frozen pod is answered when it thaws).
     */
    private Recovery watch(long at, java.util.concurrent.CompletableFuture<Void> done, Optional<String> before)
            throws InterruptedException {
        long lastUnanswered = at;
        long lastUnready = at;
        long doneAt = Long.MAX_VALUE;
        long now = at;
        long from = before.isPresent() ? Long.MAX_VALUE : at;
        while (doneAt == Long.MAX_VALUE || now - Math.max(doneAt, Math.max(lastUnanswered, lastUnready)) < STEADY.toNanos()) {
            if (now - at > PATIENCE.toNanos()) {
                throw new AssertionError("not served again in " + PATIENCE.toMinutes() + " minutes\n" + logs());
            }
            boolean answers = false;
            boolean ready = false;
            long sampled = System.nanoTime();
            for (GatePod pod : pods) {
                if (pod.lilbeeAnswers(SAMPLE)) {
                    answers = true;
                    ready |= pod.probe("ready", SAMPLE) == 200;
                }
            }
            now = System.nanoTime();
            boolean late = now - sampled > SAMPLE.toNanos();
            if (!answers || late) {
                lastUnanswered = now;
            }
            if (!ready || late) {
                lastUnready = now;
            }
            if (doneAt == Long.MAX_VALUE && done.isDone()) {
                doneAt = now;
            }
            if (from == Long.MAX_VALUE && !gateFile().equals(before.orElseThrow())) {
                from = now;
            }
            Thread.sleep(5);
        }
        if (from == Long.MAX_VALUE) {
            throw new AssertionError("the reset left the gate file where it was");
        }
        return new Recovery(Math.max(0, lastUnanswered - from) / 1000, Math.max(0, lastUnready - from) / 1000);
    }

    private String logs() {
        return String.join("\n", pods.stream().map(GatePod::logs).toList());
    }

    private record Recovery(long answeringMicros, long readyMicros) {
    }
}
