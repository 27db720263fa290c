package dev.warden.routing;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Role routing's one rule, whole: the serving pod alone, and a pod that does not serve takes out only itself. */
class RouteTest {

    private static final String OWN = "10.0.0.1";
    private static final String OTHER = "10.0.0.2";

    @Test
    void whatEachPodWritesOfWhatItReads() {
        assertEquals(Optional.of(Set.of(OWN)), Route.next(true, OWN, Set.of()), "serving: in");
        assertEquals(Optional.of(Set.of(OWN)), Route.next(true, OWN, Set.of(OTHER)), "serving: the dead one's successor replaces it");
        assertEquals(Optional.of(Set.of(OWN)), Route.next(true, OWN, Set.of(OWN, OTHER)), "serving: alone");
        assertEquals(Optional.empty(), Route.next(true, OWN, Set.of(OWN)), "serving, routed here alone: nothing to write");
        assertEquals(Optional.empty(), Route.next(false, OWN, Set.of()), "standing by: nothing");
        assertEquals(Optional.empty(), Route.next(false, OWN, Set.of(OTHER)), "standing by: another pod is not its to take out");
        assertEquals(Optional.of(Set.of()), Route.next(false, OWN, Set.of(OWN)), "no longer serving: out");
        assertEquals(Optional.of(Set.of(OTHER)), Route.next(false, OWN, Set.of(OWN, OTHER)), "out, itself alone");
    }
}
