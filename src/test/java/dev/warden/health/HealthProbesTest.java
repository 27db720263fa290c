package dev.warden.health;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItem;

import dev.warden.config.LilbeePaths;
import dev.warden.hold.LockKeeper;
import dev.warden.testing.Await;
import dev.warden.testing.Peer;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.specification.RequestSpecification;
import java.net.URL;
import jakarta.inject.Inject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import java.util.Map;
import dev.warden.testing.PromText;

/** The SmallRye probes as Kubernetes reads them, served by the Quarkus application itself. */
@QuarkusTest
class HealthProbesTest {

    @Inject
    LockKeeper keeper;

    /** Probes and metrics are on the management interface, a port of their own. */
    @TestHTTPResource(value = "/", management = true)
    URL management;

    @TestHTTPResource("/")
    URL api;

    private RequestSpecification probe() {
        return given().baseUri(origin(management));
    }

    /** The injected management URL ends in its root path, /q/; the probes' paths carry it themselves. */
    private static String origin(URL url) {
        return url.getProtocol() + "://" + url.getHost() + ":" + url.getPort();
    }

    @Test
    void probesAndMetricsAreServedOnTheManagementPortAndTheApiOnlyOnItsOwn() {
        probe().when().get("/q/health/live").then().statusCode(200);
        probe().when().get("/q/metrics").then().statusCode(200);
        probe().when().get("/api/v1/status").then().statusCode(404);
        given().baseUri(origin(api)).when().get("/api/v1/status").then().statusCode(200);
        given().baseUri(origin(api)).when().get("/q/health/live").then().statusCode(404);
        given().baseUri(origin(api)).when().get("/q/metrics").then().statusCode(404);
    }

    @TempDir
    Path dir;

    @AfterEach
    void stop() {
        keeper.stop();
    }

    @Test
    void aStandbyIsLiveButNotReadyAndBecomesReadyWhenTheHolderDies() throws Exception {
        probe().when().get("/q/health/ready").then().statusCode(503)
                .body("checks.find { it.name == 'locks' }.data.state", equalTo("not serving"));

        LilbeePaths paths = new LilbeePaths(dir, dir.resolve("data"), dir.resolve("data/lancedb"), Optional.of(dir.resolve("scope")), "test");
        Files.createDirectories(paths.dataDir());
        try (Peer holder = Peer.flockHolder(paths.serverLock())) {
            keeper.start(paths, true);
            Await.until("the standby sees the holder", () -> "held-elsewhere".equals(
                    probe().get("/q/health/ready").then().extract().path("checks.find { it.name == 'locks' }.data.'data-dir.state'")));
            probe().when().get("/q/health/ready").then().statusCode(503)
                    .body("checks.find { it.name == 'locks' }.data.'data-dir.holder-pid'", equalTo((int) holder.pid()))
                    .body("checks.find { it.name == 'locks' }.data.'scope.state'", equalTo("held"));
            probe().when().get("/q/health/live").then().statusCode(200)
                    .body("checks.name", hasItem("lock-keeper"));
            probe().when().get("/q/health/started").then().statusCode(503);
            String standby = probe().when().get("/q/metrics").then().statusCode(200).extract().asString();
            Map<String, String> dataDir = Map.of("data_dir", dir.toRealPath().resolve("data").toString());
            assertEquals(0.0, PromText.value(standby, "warden_lock_held", Map.of("lock", "data-dir")).orElseThrow(), standby);
            assertEquals(1.0, PromText.value(standby, "warden_lock_held", Map.of("lock", "scope")).orElseThrow(), standby);
            assertEquals(0.0, PromText.value(standby, "warden_serving", dataDir).orElseThrow(), standby);

            holder.kill();
            Await.until("readiness is UP", () -> probe().get("/q/health/ready").statusCode() == 200);
            probe().when().get("/q/health/started").then().statusCode(200);
            probe().when().get("/q/health/ready").then()
                    .body("checks.find { it.name == 'locks' }.data.'data-dir.state'", equalTo("held"))
                    .body("checks.find { it.name == 'locks' }.data.'scope.path'",
                            equalTo(dir.toRealPath().resolve("scope/server.scope.lock").toString()));
            String serving = probe().when().get("/q/metrics").then().extract().asString();
            assertEquals(1.0, PromText.value(serving, "warden_lock_held", Map.of("lock", "data-dir")).orElseThrow(), serving);
            assertTrue(PromText.value(serving, "warden_lock_last_wait_seconds", Map.of("lock", "data-dir")).orElseThrow() > 0,
                    serving);
            assertEquals(1.0, PromText.value(serving, "warden_serving", dataDir).orElseThrow(), serving);
        }
        keeper.stop();
        probe().when().get("/q/health/ready").then().statusCode(503)
                .body("checks.find { it.name == 'locks' }.data.state", equalTo("stopped"));
        probe().when().get("/q/health/live").then().statusCode(200);
    }
}
