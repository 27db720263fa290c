package dev.warden.routing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.Await;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The role label follows readiness: set once per change (not every look), tried again after a refusal until the API
 * server takes it, and {@code standby} when warden stops. A label played by this test, recording what it was told.
 */
class RoleKeeperTest {

    /** A pod label that records each value it took, and refuses the next {@code refusals} tries. */
    private static final class RecordedLabel implements PodLabel {
        final List<String> taken = new CopyOnWriteArrayList<>();
        final AtomicInteger refusals = new AtomicInteger();
        final AtomicInteger tries = new AtomicInteger();

        @Override
        public String pod() {
            return "test/pod-a";
        }

        @Override
        public void set(String value) {
            tries.incrementAndGet();
            if (refusals.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                throw new IllegalStateException("cannot label pod test/pod-a: the API server answered 503");
            }
            taken.add(value);
        }
    }

    @Test
    void theLabelFollowsReadinessOncePerChangeAndIsStandbyWhenWardenStops() {
        RecordedLabel label = new RecordedLabel();
        AtomicBoolean ready = new AtomicBoolean();
        RoleKeeper keeper = new RoleKeeper(label, ready::get, Duration.ofMillis(5), Duration.ofMillis(20));
        keeper.start();
        Await.until("standby first", () -> keeper.applied() == Role.STANDBY);
        ready.set(true);
        Await.until("primary once ready", () -> keeper.applied() == Role.PRIMARY);
        ready.set(false);
        Await.until("standby once not ready", () -> keeper.applied() == Role.STANDBY);
        ready.set(true);
        Await.until("primary again", () -> keeper.applied() == Role.PRIMARY);
        keeper.stop();
        assertEquals(List.of("standby", "primary", "standby", "primary", "standby"), label.taken,
                "one patch per change, and standby as warden stops");
    }

    @Test
    void aRefusedPatchIsTriedAgainUntilTakenAndNotBefore() {
        RecordedLabel label = new RecordedLabel();
        label.refusals.set(3);
        AtomicBoolean ready = new AtomicBoolean(true);
        RoleKeeper keeper = new RoleKeeper(label, ready::get, Duration.ofMillis(5), Duration.ofMillis(100));
        long began = System.nanoTime();
        keeper.start();
        Await.until("primary once the API server takes it", () -> keeper.applied() == Role.PRIMARY);
        Duration took = Duration.ofNanos(System.nanoTime() - began);
        keeper.stop();
        assertEquals(4, label.tries.get() - 1, "three refusals, then taken (and standby at the stop)");
        assertTrue(took.compareTo(Duration.ofMillis(300)) >= 0, "tried again only every retry: " + took.toMillis() + " ms");
        assertEquals(List.of("primary", "standby"), label.taken);
    }

    @Test
    void aStopWithNothingTakenYetStillLabelsStandby() {
        RecordedLabel label = new RecordedLabel();
        label.refusals.set(1_000_000);
        RoleKeeper keeper = new RoleKeeper(label, () -> true, Duration.ofMillis(5), Duration.ofSeconds(10));
        keeper.start();
        Await.until("a first try", () -> label.tries.get() > 0);
        label.refusals.set(0);
        keeper.stop();
        assertEquals(List.of("standby"), label.taken, "never primary, and standby as it stops");
    }
}
