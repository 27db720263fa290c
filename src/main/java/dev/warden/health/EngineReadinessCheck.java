package dev.warden.health;

import dev.warden.config.WardenConfig;
import dev.warden.reaper.ReaperService;
import dev.warden.reaper.ReaperStatus;
import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/**
 * Not ready while a recorded (or configured) engine does not answer, when
 * {@code warden.engine.readiness} is on (by default, whenever an engine is recorded or
 * configured). Reads the reaper's last pass; no HTTP per probe.
 */
@Readiness
@ApplicationScoped
public class EngineReadinessCheck implements HealthCheck {

    private final ReaperService reaper;
    private final WardenConfig config;

    public EngineReadinessCheck(ReaperService reaper, WardenConfig config) {
        this.reaper = reaper;
        this.config = config;
    }

    @Override
    public HealthCheckResponse call() {
        ReaperStatus status = reaper.status();
        boolean required = config.engine().readiness().orElse(status.engineExpected());
        boolean up = !required || status.engineAnswers();
        return HealthCheckResponse.named("engine").status(up)
                .withData("required", required)
                .withData("expected", status.engineExpected())
                .withData("answers", status.engineAnswers())
                .withData("reaper", status.detail())
                .build();
    }
}
