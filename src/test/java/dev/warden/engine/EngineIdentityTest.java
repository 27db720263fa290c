package dev.warden.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.FakeEngine;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

class EngineIdentityTest {

    /** The UID the tests and their fake engines run as. */
    private static final int OWN_UID = Integer.parseInt(dev.warden.lock.FileLocker.currentUid());

    private final ProcessTable processes = new ProcessTable();
    private final EngineIdentity identity = new EngineIdentity(processes);

    private static EngineRecord record(long pid, OptionalDouble createdAt) {
        return new EngineRecord(Path.of("llama-swap.state.chat.1.json"), "chat", pid, OptionalLong.empty(), createdAt,
                Optional.empty(), List.of(), OptionalInt.empty(), OptionalInt.of(OWN_UID));
    }

    @Test
    void aLiveLlamaSwapWithItsRecordedStartTimeIsOurs() throws Exception {
        try (FakeEngine engine = FakeEngine.startLlamaSwap("--port", "0")) {
            Identity id = identity.of(record(engine.pid(), OptionalDouble.of(engine.createdAt())));
            Identity.Ours ours = assertInstanceOf(Identity.Ours.class, id);
            assertEquals("llama-swap", ours.process().name());
            assertEquals(engine.pid(), ours.process().pgid(), "setsid gives the fake a group of its own");
            Identity.Stranger incomplete = assertInstanceOf(Identity.Stranger.class, identity.of(record(engine.pid(),
                    OptionalDouble.empty())), "without created_at a reused pid cannot be told apart");
            assertTrue(incomplete.reason().contains("no created_at"), incomplete.reason());
        }
    }

    @Test
    void aPidReusedByAProcessStartedLaterIsAStranger() throws Exception {
        try (FakeEngine engine = FakeEngine.startLlamaSwap("--port", "0")) {
            Identity id = identity.of(record(engine.pid(), OptionalDouble.of(engine.createdAt() - 30)));
            Identity.Stranger stranger = assertInstanceOf(Identity.Stranger.class, id);
            assertTrue(stranger.reason().contains("the pid was reused"), stranger.reason());
        }
    }

    /**
     * A neighbour of another UID writes a record naming a live llama-swap (its pid, start and argv are in
     * /proc for anyone): warden never signals, on its behalf, a process it could not signal itself.
     */
    @Test
    void aRecordOwnedByAnotherUserThanTheEnginesIsAStranger() throws Exception {
        try (FakeEngine engine = FakeEngine.startLlamaSwap("--port", "0")) {
            EngineRecord forged = new EngineRecord(Path.of("llama-swap.state.chat.1.json"), "chat", engine.pid(),
                    OptionalLong.empty(), OptionalDouble.of(engine.createdAt()), Optional.empty(), List.of(),
                    OptionalInt.empty(), OptionalInt.of(OWN_UID + 4242));
            Identity.Stranger stranger = assertInstanceOf(Identity.Stranger.class, identity.of(forged));
            assertTrue(stranger.reason().contains("owned by UID " + (OWN_UID + 4242)) && stranger.reason()
                    .contains("runs as UID " + OWN_UID), stranger.reason());
        }
    }

    @Test
    void aProcessThatIsNotLlamaSwapIsAStranger() throws Exception {
        try (FakeEngine other = FakeEngine.startStranger("postgres")) {
            Identity.Stranger stranger = assertInstanceOf(Identity.Stranger.class,
                    identity.of(record(other.pid(), OptionalDouble.of(other.createdAt()))));
            assertTrue(stranger.reason().contains("runs 'postgres', not llama-swap"), stranger.reason());
        }
    }

    @Test
    void pidOneZeroAndWardensOwnPidAreNeverOurs() {
        assertInstanceOf(Identity.Stranger.class, identity.of(record(1, OptionalDouble.empty())));
        assertInstanceOf(Identity.Stranger.class, identity.of(record(0, OptionalDouble.empty())));
        assertInstanceOf(Identity.Stranger.class, identity.of(record(-5, OptionalDouble.empty())));
        assertInstanceOf(Identity.Stranger.class, identity.of(record(ProcessHandle.current().pid(), OptionalDouble.empty())));
    }

    @Test
    void anExitedEngineIsGone() throws Exception {
        FakeEngine engine = FakeEngine.startLlamaSwap("--port", "0");
        long pid = engine.pid();
        engine.kill();
        assertInstanceOf(Identity.Gone.class, identity.of(record(pid, OptionalDouble.empty())));
    }

    /** Any process in the pod can listen on a port a record names: the API key goes only to the recorded llama-swap itself. */
    @Test
    void theApiKeyGoesOnlyToTheRecordedLlamaSwapListeningOnItsPort() throws Exception {
        int enginePort = FakeEngine.freePort();
        int squattedPort = FakeEngine.freePort();
        EngineClient client = new EngineClient(new com.fasterxml.jackson.databind.ObjectMapper(), java.time.Duration.ofMillis(500),
                java.time.Duration.ofSeconds(2), java.time.Duration.ofSeconds(30), Optional.of("sekret"));
        try (FakeEngine engine = FakeEngine.startLlamaSwap("--port", Integer.toString(enginePort));
                FakeEngine squatter = FakeEngine.startStranger("llama-swap", "--port", Integer.toString(squattedPort))) {
            squatter.await("ready");
            EngineRecord honest = record(engine, enginePort);
            EngineClient.Endpoint verified = identity.endpoint(honest).orElseThrow();
            assertTrue(verified.trusted(), "the recorded llama-swap listens on its recorded port");
            assertTrue(client.answers(verified));
            engine.await("auth Bearer sekret");

            EngineRecord forged = record(engine, squattedPort);
            EngineClient.Endpoint squatted = identity.endpoint(forged).orElseThrow();
            assertFalse(squatted.trusted(), "another process listens on the port this record names");
            client.answers(squatted);
            squatter.await("auth null");
            assertFalse(squatter.printed().contains("auth Bearer sekret"), squatter.printed().toString());
        }
    }

    private static EngineRecord record(FakeEngine engine, int proxyPort) {
        return new EngineRecord(Path.of("llama-swap.state.chat.1.json"), "chat", engine.pid(), OptionalLong.of(engine.pid()),
                OptionalDouble.of(engine.createdAt()), Optional.empty(), List.of(), OptionalInt.of(proxyPort),
                OptionalInt.of(OWN_UID));
    }
}
