package dev.warden.reaper;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import dev.warden.engine.EngineRecord;
import dev.warden.reaper.ReaperRule.Decision;
import dev.warden.reaper.ReaperRule.Look;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/** The last-user-out rule as a table: what a pass sees, and what it decides (the pass acts on it, the dry run says it). */
class ReaperRuleTest {

    private static final Instant NOW = Instant.parse("2026-12-07T12:00:00Z");
    private static final EngineRecord ENGINE = new EngineRecord(Path.of("/engine/llama-swap.state.chat.1.json"), "chat", 4242,
            OptionalLong.of(4242), OptionalDouble.of(1.0), Optional.empty(), List.of(), OptionalInt.empty(), OptionalInt.empty());
    private static final Duration TTL = Duration.ofMinutes(5);

    private static Look look(boolean users, List<EngineRecord> recorded, boolean external, boolean warm,
            List<EngineRecord> stoppable) {
        return new Look(users, recorded, external, warm, Optional.of(TTL), stoppable);
    }

    private static Decision decide(Look look, Optional<Instant> idleSince, boolean unloaded) {
        return ReaperRule.decide(look, idleSince, unloaded, NOW);
    }

    @Test
    void aLiveUserKeepsEverything() {
        assertInstanceOf(Decision.UsersLive.class, decide(look(true, List.of(ENGINE), false, false, List.of(ENGINE)),
                Optional.empty(), false));
    }

    @Test
    void withNoUserAnEngineIsStoppedUnlessAnotherDirsUsersHoldIt() {
        assertEquals(new Decision.Stop(List.of(ENGINE), "every user is gone"),
                decide(look(false, List.of(ENGINE), false, false, List.of(ENGINE)), Optional.empty(), false));
        assertInstanceOf(Decision.NothingToDo.class, decide(look(false, List.of(ENGINE), false, false, List.of()),
                Optional.empty(), false));
        assertEquals(new Decision.NothingToDo("no user and no engine"),
                decide(look(false, List.of(), false, false, List.of()), Optional.empty(), false));
    }

    @Test
    void aKeptWarmEngineIdlesItsTimeThenIsUnloadedOnce() {
        Look warm = look(false, List.of(ENGINE), false, true, List.of(ENGINE));
        assertEquals(new Decision.Idling("idle for 0 s of 300 s"), decide(warm, Optional.empty(), false));
        assertEquals(new Decision.Idling("idle for 299 s of 300 s"), decide(warm, Optional.of(NOW.minusSeconds(299)), false));
        assertEquals(new Decision.Unload(TTL), decide(warm, Optional.of(NOW.minus(TTL)), false));
        assertInstanceOf(Decision.UnloadedEarlier.class, decide(warm, Optional.of(NOW.minus(TTL)), true));
        Look forever = new Look(false, List.of(ENGINE), false, true, Optional.empty(), List.of(ENGINE));
        assertInstanceOf(Decision.Idling.class, decide(forever, Optional.of(NOW.minus(Duration.ofDays(9))), false));
    }

    /** An engine lilbee did not start ({@code warden.engine.url}) and none recorded: kept warm, unloaded, never stopped. */
    @Test
    void anEngineLilbeeDidNotStartIsKeptWarm() {
        Look external = look(false, List.of(), true, false, List.of());
        assertInstanceOf(Decision.Idling.class, decide(external, Optional.of(NOW.minusSeconds(1)), false));
        assertEquals(new Decision.Unload(TTL), decide(external, Optional.of(NOW.minus(TTL)), false));
        assertInstanceOf(Decision.UnloadedEarlier.class, decide(external, Optional.of(NOW.minus(TTL)), true));
    }

    /**
     * A kept-warm engine's unload refused: stopped when none of its engines answers any more, else the refusal stands;
     * an engine lilbee did not start (no record) is never stopped.
     */
    @Test
    void aRefusedUnloadStopsOnlyAnEngineThatStoppedAnswering() {
        Look warm = look(false, List.of(ENGINE), false, true, List.of(ENGINE));
        assertEquals(new Decision.Stop(List.of(ENGINE), "it stopped answering"), ReaperRule.afterRefusedUnload(warm, false, "gone"));
        assertEquals(new Decision.UnloadRefused("busy"), ReaperRule.afterRefusedUnload(warm, true, "busy"));
        assertEquals(new Decision.UnloadRefused("busy"),
                ReaperRule.afterRefusedUnload(look(false, List.of(), true, false, List.of()), false, "busy"));
    }
}
