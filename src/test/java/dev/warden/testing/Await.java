package dev.warden.testing;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/**
 * Waits for a condition that another process brings about. The bound is generous on purpose:
 * it only decides how long a broken build takes to fail, never whether a working one passes.
 */
public final class Await {

    public static final Duration PATIENCE = Duration.ofSeconds(20);

    private Await() {
    }

    public static void until(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("gave up after " + PATIENCE.toSeconds() + " s waiting until " + what);
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted waiting until " + what);
            }
        }
    }
}
