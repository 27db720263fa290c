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
        until(what, PATIENCE, condition);
    }

    /** For what takes a real peer longer: a {@code lilbee serve} start, a kubelet's restart back-off. */
    public static void until(String what, Duration patience, BooleanSupplier condition) {
        long deadline = System.nanoTime() + patience.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("gave up after " + patience.toSeconds() + " s waiting until " + what);
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
