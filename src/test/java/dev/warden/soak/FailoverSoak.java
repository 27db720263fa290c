package dev.warden.soak;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.WardenProcess;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Failover loop: two {@code warden serve} on one data dir; the one that is ready is SIGKILLed and
 * started again, 100 times, while readiness is sampled every 10 ms on both.
 *
 * <p>Never both ready: a process that answered 200 in a sample that ended before its predecessor
 * was SIGKILLed said ready while another process certainly held the lock. Never both failing for
 * long: from each SIGKILL to the successor's first 200 must stay under
 * {@code warden.soak.failover.max-gap-ms}, 250 ms: the takeover itself is a few ms, but the holder here
 * is a JVM whose flocks the kernel frees only after tearing down its address space, the sampling adds
 * up to 10 ms, and on two busy cores the gap's maximum was seen between 37 and 75 ms over five runs
 * (median 20 to 26 ms), and at 152 ms (median 50 ms) in a later run on a noisier machine, where the code
 * of the run before gave the same figures. A tick-bound takeover would be a second.
 */
class FailoverSoak {

    private static final int ROUNDS = Integer.getInteger("warden.soak.failover.rounds", 100);
    private static final long MAX_GAP_MS = Long.getLong("warden.soak.failover.max-gap-ms", 250);
    private static final long SAMPLE_EVERY_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

    @TempDir
    Path root;

    record Sample(long pid, long start, long end, int status) {
    }

    record Kill(long victim, long successor, long at) {
    }

    /** One of the two places a warden runs in; the sampler follows whichever process is in it. */
    static final class Slot {
        final AtomicReference<WardenProcess> process = new AtomicReference<>();
        final List<Sample> samples = Collections.synchronizedList(new ArrayList<>());
    }

    private WardenProcess start(int n) throws Exception {
        return WardenProcess.serve("failover-" + n, "--data-root", root.toString());
    }

    @Test
    void neverBothReadyAndNeverBothDownForLong() throws Exception {
        Slot[] slots = {new Slot(), new Slot()};
        AtomicBoolean sampling = new AtomicBoolean(true);
        List<Thread> samplers = new ArrayList<>();
        List<Kill> kills = new ArrayList<>();
        Random random = new Random(42);
        try {
            slots[0].process.set(start(0));
            slots[0].process.get().awaitStatus("/q/health/ready", 200);
            slots[1].process.set(start(1));
            slots[1].process.get().awaitLockData("data-dir.state", "held-elsewhere");
            for (Slot slot : slots) {
                samplers.add(Thread.ofPlatform().daemon().start(() -> sample(slot, sampling)));
            }
            int holder = 0;
            for (int round = 1; round <= ROUNDS; round++) {
                int standby = 1 - holder;
                WardenProcess victim = slots[holder].process.get();
                WardenProcess successor = slots[standby].process.get();
                Thread.sleep(random.nextInt(100));
                long at = System.nanoTime();
                victim.kill();
                kills.add(new Kill(victim.pid(), successor.pid(), at));
                successor.awaitStatus("/q/health/ready", 200);
                WardenProcess restarted = start(round + 1);
                slots[holder].process.set(restarted);
                restarted.awaitLockData("data-dir.state", "held-elsewhere");
                holder = standby;
            }
        } finally {
            sampling.set(false);
            for (Thread sampler : samplers) {
                sampler.join(5000);
            }
            for (Slot slot : slots) {
                WardenProcess last = slot.process.get();
                if (last != null) {
                    last.close();
                }
            }
        }

        List<Sample> all = new ArrayList<>();
        for (Slot slot : slots) {
            all.addAll(slot.samples);
        }
        List<String> bothReady = new ArrayList<>();
        List<Long> gaps = new ArrayList<>();
        for (Kill kill : kills) {
            long firstReady = Long.MAX_VALUE;
            for (Sample sample : all) {
                if (sample.pid() != kill.successor() || sample.status() != 200) {
                    continue;
                }
                if (sample.end() < kill.at()) {
                    bothReady.add("pid " + kill.successor() + " answered ready " + (kill.at() - sample.end()) / 1000
                            + " us before pid " + kill.victim() + ", which held the lock, was killed");
                } else {
                    firstReady = Math.min(firstReady, sample.end());
                }
            }
            gaps.add(firstReady == Long.MAX_VALUE ? Long.MAX_VALUE : TimeUnit.NANOSECONDS.toMillis(firstReady - kill.at()));
        }
        List<Long> sorted = gaps.stream().sorted().toList();
        System.out.printf("failover: %d rounds, %d samples; kill to the successor's first ready sample: median %d ms,"
                + " p99 %d ms, max %d ms%n", kills.size(), all.size(), sorted.get(sorted.size() / 2),
                sorted.get((int) Math.ceil(sorted.size() * 0.99) - 1), sorted.getLast());
        assertTrue(kills.size() == ROUNDS, "every round ran");
        assertTrue(bothReady.isEmpty(), String.join("\n", bothReady));
        assertTrue(sorted.getLast() <= MAX_GAP_MS, "both were down for longer than " + MAX_GAP_MS + " ms: " + gaps);
    }

    private static void sample(Slot slot, AtomicBoolean sampling) {
        long next = System.nanoTime();
        while (sampling.get()) {
            WardenProcess process = slot.process.get();
            long start = System.nanoTime();
            int status = process.status("/q/health/ready");
            slot.samples.add(new Sample(process.pid(), start, System.nanoTime(), status));
            next += SAMPLE_EVERY_NANOS;
            long wait = next - System.nanoTime();
            if (wait > 0) {
                try {
                    TimeUnit.NANOSECONDS.sleep(wait);
                } catch (InterruptedException e) {
                    return;
                }
            } else {
                next = System.nanoTime();
            }
        }
    }
}
