package dev.warden.routing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.Await;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The Endpoints follows readiness: this pod written in alone once it serves (once per change, not every look), read
 * again while it serves and written in again over another warden's write, taken out once it does not serve and when
 * warden stops, never another pod taken out by a warden that does not serve; a refused write is tried again every retry,
 * a lost race at once. An Endpoints played by this test, with versions as the API server keeps them.
 */
class RoleKeeperTest {

    private static final String OWN = "10.0.0.1";
    private static final String OTHER = "10.0.0.2";

    /** An Endpoints that records each write, refuses the next {@code refusals} requests, and keeps a version. */
    private static final class RecordedEndpoints implements ServiceEndpoints {
        final List<Set<String>> written = new CopyOnWriteArrayList<>();
        final AtomicInteger refusals = new AtomicInteger();
        final AtomicInteger requests = new AtomicInteger();
        /** Writes of another writer to slip in between this warden's next reads and writes. */
        final AtomicInteger slips = new AtomicInteger();
        private Routed now = new Routed(Set.of(), 1);

        @Override
        public String describe() {
            return "test/lilbee";
        }

        @Override
        public String own() {
            return OWN;
        }

        @Override
        public boolean asWritten(Routed read) {
            return true;
        }

        @Override
        public synchronized Routed read() {
            refuse();
            return now;
        }

        @Override
        public synchronized Routed write(Routed read, Set<String> addresses) throws Changed {
            refuse();
            if (slips.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                writtenElsewhere(Set.of(OWN, OTHER));
            }
            if (!read.version().equals(now.version())) {
                throw new Changed("changed");
            }
            written.add(addresses);
            now = new Routed(addresses, (int) now.version() + 1);
            return now;
        }

        /** Another warden's write, between this one's read and write. */
        synchronized void writtenElsewhere(Set<String> addresses) {
            now = new Routed(addresses, (int) now.version() + 1);
        }

        synchronized Set<String> routed() {
            return now.addresses();
        }

        private void refuse() {
            requests.incrementAndGet();
            if (refusals.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                throw new IllegalStateException("the Endpoints test/lilbee could not be read: the API server answered 503");
            }
        }
    }

    private static RoleKeeper keeper(RecordedEndpoints endpoints, AtomicBoolean ready, Duration retry) {
        return new RoleKeeper(endpoints, ready::get, Duration.ofMillis(5), Duration.ofMillis(20), retry);
    }

    @Test
    void theEndpointsFollowsReadinessOncePerChangeAndRoutesElsewhereWhenWardenStops() {
        RecordedEndpoints endpoints = new RecordedEndpoints();
        AtomicBoolean ready = new AtomicBoolean();
        RoleKeeper keeper = keeper(endpoints, ready, Duration.ofMillis(20));
        keeper.start();
        Await.until("standby first", () -> keeper.applied() == Role.STANDBY);
        ready.set(true);
        Await.until("primary once ready", () -> keeper.applied() == Role.PRIMARY);
        ready.set(false);
        Await.until("standby once not ready", () -> keeper.applied() == Role.STANDBY);
        ready.set(true);
        Await.until("primary again", () -> keeper.applied() == Role.PRIMARY);
        keeper.stop();
        assertEquals(List.of(Set.of(OWN), Set.of(), Set.of(OWN), Set.of()), endpoints.written,
                "one write per change (nothing written while it routes elsewhere already), and out as warden stops");
    }

    @Test
    void aServingWardenWritesItselfInAgainOverAnotherWardensWrite() {
        RecordedEndpoints endpoints = new RecordedEndpoints();
        AtomicBoolean ready = new AtomicBoolean(true);
        RoleKeeper keeper = keeper(endpoints, ready, Duration.ofMillis(20));
        keeper.start();
        Await.until("routed here", () -> endpoints.routed().equals(Set.of(OWN)));
        endpoints.writtenElsewhere(Set.of(OTHER));
        Await.until("routed here again, alone", () -> endpoints.written.size() == 2 && endpoints.routed().equals(Set.of(OWN)));
        keeper.stop();
    }

    @Test
    void aWardenThatDoesNotServeTakesOnlyItselfOut() {
        RecordedEndpoints endpoints = new RecordedEndpoints();
        endpoints.writtenElsewhere(Set.of(OWN, OTHER));
        RoleKeeper keeper = keeper(endpoints, new AtomicBoolean(), Duration.ofMillis(20));
        keeper.start();
        Await.until("taken out", () -> keeper.applied() == Role.STANDBY);
        assertEquals(Set.of(OTHER), endpoints.routed(), "the other pod stays");
        endpoints.writtenElsewhere(Set.of(OTHER));
        keeper.stop();
        assertEquals(List.of(Set.of(OTHER)), endpoints.written, "and it writes nothing more, stopping either");
    }

    @Test
    void aWriteThatLostARaceIsDecidedAgainOnWhatWonIt() {
        RecordedEndpoints endpoints = new RecordedEndpoints();
        AtomicBoolean ready = new AtomicBoolean(true);
        RoleKeeper keeper = keeper(endpoints, ready, Duration.ofSeconds(10));
        keeper.start();
        Await.until("routed here", () -> keeper.applied() == Role.PRIMARY);
        endpoints.slips.set(2);
        ready.set(false);
        Await.until("out, the other writer's pod kept", () -> keeper.applied() == Role.STANDBY);
        assertEquals(Set.of(OTHER), endpoints.routed(), "decided on what won, at once (no retry wait)");
        ready.set(true);
        Await.until("in again", () -> keeper.applied() == Role.PRIMARY);
        endpoints.slips.set(1);
        keeper.stop();
        assertEquals(Set.of(OTHER), endpoints.routed(), "a stop that lost its race read again and took itself out");
    }

    @Test
    void aRefusedRequestIsTriedAgainUntilTakenAndNotBefore() {
        RecordedEndpoints endpoints = new RecordedEndpoints();
        endpoints.refusals.set(3);
        RoleKeeper keeper = keeper(endpoints, new AtomicBoolean(true), Duration.ofMillis(100));
        long began = System.nanoTime();
        keeper.start();
        Await.until("primary once the API server takes it", () -> keeper.applied() == Role.PRIMARY);
        Duration took = Duration.ofNanos(System.nanoTime() - began);
        keeper.stop();
        assertTrue(took.compareTo(Duration.ofMillis(300)) >= 0, "tried again only every retry: " + took.toMillis() + " ms");
        assertEquals(List.of(Set.of(OWN), Set.of()), endpoints.written);
    }

    @Test
    void aStopWithNothingTakenYetStillTakesThisPodOut() {
        RecordedEndpoints endpoints = new RecordedEndpoints();
        endpoints.writtenElsewhere(Set.of(OWN));
        endpoints.refusals.set(1_000_000);
        RoleKeeper keeper = keeper(endpoints, new AtomicBoolean(true), Duration.ofSeconds(10));
        keeper.start();
        Await.until("a first try", () -> endpoints.requests.get() > 0);
        endpoints.refusals.set(0);
        keeper.stop();
        assertEquals(List.of(Set.of()), endpoints.written, "never in, and out as it stops");
    }
}
