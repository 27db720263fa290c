package dev.warden.testing;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;

/**
 * Every 100 ms, asks who is doing what only one may do (serving, being started) and notes each moment
 * more than one is, until closed: the moments are what a test of mutual exclusion asserts to be none.
 * {@code who} is asked from the watch's own thread: what it reads must be safe to read from there.
 */
public final class OverlapWatch implements AutoCloseable {

    private final List<String> overlaps = new CopyOnWriteArrayList<>();
    private final AtomicBoolean watching = new AtomicBoolean(true);
    private final Thread thread;

    private OverlapWatch(Supplier<List<?>> who) {
        thread = Thread.ofPlatform().daemon().name("overlap-watch").start(() -> {
            while (watching.get()) {
                List<?> now;
                try {
                    now = who.get();
                } catch (RuntimeException e) {
                    // Noted, so that a watch that stopped cannot pass for one that saw nothing.
                    overlaps.add("the watch stopped: " + e);
                    return;
                }
                if (now.size() > 1) {
                    overlaps.add(System.currentTimeMillis() + ": " + now);
                }
                try {
                    Thread.sleep(100);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
    }

    /** Starts watching; {@code who} names those doing it now. */
    public static OverlapWatch of(Supplier<List<?>> who) {
        return new OverlapWatch(who);
    }

    /** The moments more than one was, each with who: empty is right. */
    public List<String> overlaps() {
        return List.copyOf(overlaps);
    }

    @Override
    public void close() throws InterruptedException {
        watching.set(false);
        thread.join();
    }
}
