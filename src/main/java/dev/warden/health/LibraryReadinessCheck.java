package dev.warden.health;

import dev.warden.library.LibraryLook;
import dev.warden.library.LibraryWatch;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.Optional;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.HealthCheckResponseBuilder;
import org.eclipse.microprofile.health.Readiness;

/** Whether a sync, an import or a reset runs, and whether the write lock is held: data only, always UP. */
@Readiness
@ApplicationScoped
public class LibraryReadinessCheck implements HealthCheck {

    private final LibraryWatch watch;

    public LibraryReadinessCheck(LibraryWatch watch) {
        this.watch = watch;
    }

    @Override
    public HealthCheckResponse call() {
        HealthCheckResponseBuilder response = HealthCheckResponse.named("library").up();
        Optional<LibraryLook> look = watch.last();
        if (look.isEmpty()) {
            return response.withData("state", "not looked at yet").build();
        }
        response.withData("sync-running", look.get().syncRunning())
                .withData("reset-running", look.get().resetRunning())
                .withData("write-lock", look.get().writeLock());
        look.get().error().ifPresent(e -> response.withData("error", e));
        return response.build();
    }
}
