package dev.warden.engine;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.lock.NativePosix;
import org.junit.jupiter.api.Test;

class SignallerTest {

    private final ProcessTable processes = new ProcessTable();
    private final Signaller signaller = new Signaller(new NativePosix(), processes);

    @Test
    void pidZeroOneWardenItselfAndItsGroupAreNeverSignalled() {
        long self = ProcessHandle.current().pid();
        assertFalse(signaller.allowed(0));
        assertFalse(signaller.allowed(1));
        assertFalse(signaller.allowed(-1), "kill(-1) would signal every process");
        assertFalse(signaller.allowed(self));
        assertFalse(signaller.allowed(-self));
        assertFalse(signaller.allowed(-processes.ownGroup()));
        assertTrue(signaller.allowed(self + 100_000));
    }

    @Test
    void aRefusedTargetIsNotSignalled() {
        assertTrue(!signaller.terminate(ProcessHandle.current().pid(), ProcessHandle.current().pid(),
                java.time.Duration.ofMillis(10), java.time.Duration.ofMillis(10)), "warden must still be alive");
    }
}
