package dev.warden.library;

import dev.warden.gate.pod.GateKeeper;
import dev.warden.hold.LockKeeper;
import io.quarkus.scheduler.Scheduled;
import jakarta.inject.Singleton;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Looks at the library's locks now and then while warden serves, for the readiness probe's data
 * (informational: it never changes UP or DOWN), every 5 s. A look asks the kernel who holds the
 * sync mark and takes nothing, so it never refuses a lilbee reset; the probe reads the last look.
 */
@Singleton
public class LibraryWatch {

    private final LockKeeper keeper;
    private final GateKeeper gate;
    private final LibraryLocks library;
    private final AtomicReference<Optional<LibraryLook>> last = new AtomicReference<>(Optional.empty());

    public LibraryWatch(LockKeeper keeper, GateKeeper gate, LibraryLocks library) {
        this.keeper = keeper;
        this.gate = gate;
        this.library = library;
    }

    public Optional<LibraryLook> last() {
        return last.get();
    }

    @Scheduled(every = "5s", delayed = "1s", concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void look() {
        keeper.paths().or(gate::paths).ifPresent(paths -> last.set(Optional.of(
                library.look(paths.dataRoot(), paths.lancedbDir()))));
    }
}
