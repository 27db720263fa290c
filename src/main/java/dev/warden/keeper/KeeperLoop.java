package dev.warden.keeper;

import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.jboss.logging.Logger;

/**
 * The thread a keeper (of the server locks, or of the gate) runs its rounds on: one round every
 * {@code interval}, or at once when the round's wake-up (a wait in the kernel ending) completes;
 * after {@link #stop()}, a last step that lets go of everything. All the keeper's lock state is
 * confined to this thread; liveness asks {@link #health} whether it still turns.
 */
public final class KeeperLoop {

    private static final Logger LOG = Logger.getLogger(KeeperLoop.class);

    /** How long shutdown waits for a round in progress (normally microseconds) and the last step, before giving up. */
    private static final Duration STOP_JOIN = Duration.ofSeconds(2);

    private final String name;
    private final Duration interval;
    private final Duration stopJoin;
    private final CompletableFuture<Void> stopSignal = new CompletableFuture<>();
    private volatile long lastRoundNanos = System.nanoTime();
    private volatile Thread thread;

    public KeeperLoop(String name, Duration interval) {
        this(name, interval, STOP_JOIN);
    }

    /** @param stopJoin how long {@link #stop()} waits for the last step, for a keeper whose last step waits on another process */
    public KeeperLoop(String name, Duration interval, Duration stopJoin) {
        this.name = name;
        this.interval = interval;
        this.stopJoin = stopJoin;
    }

    /**
     * Runs {@code round} until {@link #stop()}, then {@code finish}, on a thread of its own.
     *
     * @param wakeUp read after each round: a future whose completion starts the next round early, or null
     */
    public synchronized void start(Runnable round, Supplier<CompletableFuture<?>> wakeUp, Runnable finish) {
        if (thread != null) {
            throw new IllegalStateException(name + " is already running");
        }
        Thread loop = Thread.ofPlatform().daemon().name(name).unstarted(() -> {
            try {
                while (!stopSignal.isDone()) {
                    try {
                        round.run();
                    } catch (RuntimeException e) {
                        LOG.errorf(e, "A round of %s failed; trying again", name);
                    }
                    lastRoundNanos = System.nanoTime();
                    awaitNextRound(wakeUp.get());
                }
            } finally {
                finish.run();
            }
        });
        thread = loop;
        loop.start();
    }

    public boolean stopping() {
        return stopSignal.isDone();
    }

    /** Ends the rounds and waits briefly for the last step. Safe to call twice, or before {@link #start}. */
    public void stop() {
        stopSignal.complete(null);
        Thread loop = thread;
        if (loop == null) {
            return;
        }
        try {
            loop.join(stopJoin);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (loop.isAlive()) {
            LOG.warnf("%s did not finish its round in time; the kernel frees its locks when warden exits", name);
        }
    }

    /**
     * Whether the machinery works: not running (nothing to be wedged), or the thread lives and
     * finished a round within {@code stallTimeout}. A wait for another holder runs on another thread
     * and never counts against it.
     */
    public KeeperHealth health(Duration stallTimeout) {
        Thread loop = thread;
        Duration since = Duration.ofNanos(System.nanoTime() - lastRoundNanos);
        if (loop != null && !loop.isAlive() && !stopSignal.isDone()) {
            // Not stopped by warden: it died (an Error, out of memory). A standby could never take over: restart it.
            return new KeeperHealth(false, since, "the " + name + " thread has died");
        }
        if (loop == null || stopSignal.isDone()) {
            return new KeeperHealth(true, Duration.ZERO, "not running");
        }
        if (since.compareTo(stallTimeout) > 0) {
            return new KeeperHealth(false, since, "the " + name + " has not finished a round for " + since.toMillis()
                    + " ms (is the volume hung?)");
        }
        return new KeeperHealth(true, since, "running");
    }

    private void awaitNextRound(CompletableFuture<?> early) {
        CompletableFuture<?> wakeUp = early == null ? stopSignal : CompletableFuture.anyOf(early, stopSignal);
        try {
            wakeUp.get(interval.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException | ExecutionException | CancellationException e) {
            // time for the next round, or the wait ended one way or another: the round sorts it out
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stopSignal.complete(null);
        }
    }

    /** Whether a keeper's machinery works, for the liveness probe. */
    public record KeeperHealth(boolean alive, Duration sinceLastRound, String detail) {
    }
}
