package dev.warden.health;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItem;

import dev.warden.config.LilbeePaths;
import dev.warden.hold.LockKeeper;
import dev.warden.testing.Await;
import dev.warden.testing.Peer;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The SmallRye probes as Kubernetes reads them, served by the Quarkus application itself. */
@QuarkusTest
class HealthProbesTest {

    @Inject
    LockKeeper keeper;

    @TempDir
    Path dir;

    @AfterEach
    void stop() {
        keeper.stop();
    }

    @Test
    void aStandbyIsLiveButNotReadyAndBecomesReadyWhenTheHolderDies() throws Exception {
        given().when().get("/q/health/ready").then().statusCode(503)
                .body("checks.find { it.name == 'locks' }.data.state", equalTo("not serving"));

        LilbeePaths paths = new LilbeePaths(dir, dir.resolve("data"), dir.resolve("data/lancedb"), Optional.of(dir.resolve("scope")), "test");
        Files.createDirectories(paths.dataDir());
        try (Peer holder = Peer.flockHolder(paths.serverLock())) {
            keeper.start(paths, true);
            Await.until("the standby sees the holder", () -> "held-elsewhere".equals(
                    given().get("/q/health/ready").then().extract().path("checks.find { it.name == 'locks' }.data.'data-dir.state'")));
            given().when().get("/q/health/ready").then().statusCode(503)
                    .body("checks.find { it.name == 'locks' }.data.'data-dir.holder-pid'", equalTo((int) holder.pid()))
                    .body("checks.find { it.name == 'locks' }.data.'scope.state'", equalTo("held"));
            given().when().get("/q/health/live").then().statusCode(200)
                    .body("checks.name", hasItem("lock-keeper"));
            given().when().get("/q/health/started").then().statusCode(503);
            given().when().get("/q/metrics").then().statusCode(200)
                    .body(containsString("warden_lock_held{lock=\"data-dir\"} 0.0"))
                    .body(containsString("warden_lock_held{lock=\"scope\"} 1.0"));

            holder.kill();
            Await.until("readiness is UP", () -> given().get("/q/health/ready").statusCode() == 200);
            given().when().get("/q/health/started").then().statusCode(200);
            given().when().get("/q/health/ready").then()
                    .body("checks.find { it.name == 'locks' }.data.'data-dir.state'", equalTo("held"))
                    .body("checks.find { it.name == 'locks' }.data.'scope.path'",
                            equalTo(dir.toRealPath().resolve("scope/server.scope.lock").toString()));
            given().when().get("/q/metrics").then()
                    .body(containsString("warden_lock_held{lock=\"data-dir\"} 1.0"))
                    .body(org.hamcrest.Matchers.matchesPattern("(?s).*warden_lock_last_wait_seconds\\{lock=\"data-dir\"} [0-9.E-]+\n.*"));
        }
        keeper.stop();
        given().when().get("/q/health/ready").then().statusCode(503)
                .body("checks.find { it.name == 'locks' }.data.state", equalTo("stopped"));
        given().when().get("/q/health/live").then().statusCode(200);
    }
}
