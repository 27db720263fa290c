package dev.warden.lock;

import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Taking one lock without blocking a keeper's round: at once when it is free, else a wait in the kernel (one at a
 * time) whose end a later round picks up. The gate's lock and hold mode's locks are taken through it alike; when to try
 * again after a failure is the caller's.
 */
public final class LockAttempt {

    private final FileLocker locker;
    private final Path path;
    private CompletableFuture<HeldLock> waiting;

    public LockAttempt(FileLocker locker, Path path) {
        this.locker = locker;
        this.path = path;
    }

    /** How an attempt stands. */
    public sealed interface Outcome {

        /** The lock is this process's from here: the caller owns it. */
        record Won(HeldLock lock) implements Outcome {
        }

        /** Another process holds it: waited for in the kernel. */
        record Waiting() implements Outcome {
        }

        /** It cannot be taken: {@code why} names the path and the fix. */
        record Failed(String why) implements Outcome {
        }
    }

    /** Takes the lock if it is free, else waits for it in the kernel (a wait already begun goes on), and says how it stands. */
    public Outcome take() {
        if (waiting == null) {
            try {
                Optional<HeldLock> won = locker.tryLockCreatingDirs(path);
                if (won.isPresent()) {
                    return new Outcome.Won(won.get());
                }
            } catch (LockException e) {
                return new Outcome.Failed(e.getMessage());
            }
            waiting = locker.lockInBackground(path);
        }
        return ended().orElse(new Outcome.Waiting());
    }

    /** How a wait in the kernel ended, once it has (the lock won, or the wait failed); empty while none has. */
    public Optional<Outcome> ended() {
        if (waiting == null || !waiting.isDone()) {
            return Optional.empty();
        }
        CompletableFuture<HeldLock> done = waiting;
        waiting = null;
        try {
            return Optional.of(new Outcome.Won(done.join()));
        } catch (CompletionException e) {
            Throwable cause = e.getCause();
            return Optional.of(new Outcome.Failed(cause instanceof LockException locked ? locked.getMessage()
                    : String.valueOf(cause)));
        }
    }

    /** The wait in the kernel in progress, whose end may start a round at once; null when none is. */
    public CompletableFuture<HeldLock> pending() {
        return waiting;
    }

    /**
     * Gives a wait up: one still in the kernel goes on until the lock is free, and a lock won then is let go at once;
     * one that has ended already, its lock won but not yet taken by a round, lets that lock go now.
     */
    public void cancel() {
        if (waiting != null) {
            waiting.cancel(false);
            waiting.thenAccept(HeldLock::close);
            waiting = null;
        }
    }
}
