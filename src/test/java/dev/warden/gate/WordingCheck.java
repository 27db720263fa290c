package dev.warden.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.config.LilbeePaths;
import dev.warden.events.PodEvent;
import dev.warden.gate.GateAction.Word;
import dev.warden.gate.GateDecision.Step;
import dev.warden.keeper.KeeperPhase;
import java.nio.file.Path;
import java.time.Instant;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * No behaviour depends on how a decision is worded: each step the production decision makes in the simulation
 * ({@link #decision}) is also decided with every sentence in it reworded (its reason, and what its words to the
 * supervisor say), and the Events (their kinds and types), the log's level and whether it speaks, and the status and
 * metrics (the published snapshot but its note) must come out the same. Each situation (the types of a step and of the
 * one before it) is checked {@value #CHECKS_A_SITUATION} times: the same one repeats in most rounds. GateSimulationTest
 * runs it over its seeds and then asks {@link #assertCovered}: every outcome and every Event kind was met.
 */
public final class WordingCheck {

    private static final int CHECKS_A_SITUATION = 20;
    private static final Set<String> EVENT_KINDS = Set.of("Elected", "Settling", "Serving", "SteppedDown", "HandedOver",
            "NotElected", "Fenced");
    /** Never met in the simulation: elected and not looking at server.lock (the round's one look always does when it
     * decides), and a server.lock that cannot be looked at (the simulated volume's files are all plain). */
    private static final Set<GateOutcome> UNREACHED = Set.of(GateOutcome.LOOKING, GateOutcome.SERVER_LOCK_FAILED);

    private final Map<GateOutcome, Long> outcomes = new EnumMap<>(GateOutcome.class);
    private final Map<String, Long> events = new TreeMap<>();
    private final Map<String, Integer> situations = new ConcurrentHashMap<>();
    private long checked;

    /** The production decision, every step it makes checked against itself reworded. */
    public GateDecision decision(GateTimings timings) {
        return new Reworded(timings);
    }

    /** Every outcome the simulation can come to, and every Event kind, was checked at least once. */
    public synchronized void assertCovered() {
        for (GateOutcome expected : GateOutcome.values()) {
            assertTrue(UNREACHED.contains(expected) || outcomes.containsKey(expected), "no step came to " + expected
                    + " to check its wording against: " + summary());
        }
        assertEquals(EVENT_KINDS, events.keySet(), "every Event kind made at least once: " + summary());
    }

    public synchronized String summary() {
        return String.format("%d steps decided twice, in %d situations; outcomes %s; Events %s", checked, situations.size(),
                outcomes, events);
    }

    /** The production decision; each step it makes is checked against itself reworded. */
    private final class Reworded extends GateDecision {

        private Step last;

        Reworded(GateTimings timings) {
            super(timings);
        }

        @Override
        public Step step(GatePhase phase, Observation seen) {
            Step step = super.step(phase, seen);
            check(Optional.ofNullable(last), step, seen);
            last = step;
            return step;
        }
    }

    private void check(Optional<Step> before, Step after, Observation seen) {
        // Each situation a few times (the same one repeats in most rounds, and its sentences with it).
        String situation = before.map(WordingCheck::situation).orElse("first") + " then " + situation(after);
        if (situations.merge(situation, 1, Integer::sum) > CHECKS_A_SITUATION) {
            return;
        }
        Optional<Step> beforeReworded = before.map(WordingCheck::reworded);
        Step afterReworded = reworded(after);
        List<String> kinds = kinds(GateEvents.between(before, after));
        assertEquals(kinds, kinds(GateEvents.between(beforeReworded, afterReworded)), after.reason());
        assertEquals(after.warns(), afterReworded.warns(), after.reason());
        assertEquals(after.isNewsAfter(before.orElse(null)), afterReworded.isNewsAfter(beforeReworded.orElse(null)),
                after.reason());
        assertEquals(withoutNote(snapshot(after, seen)), withoutNote(snapshot(afterReworded, seen)), after.reason());
        synchronized (this) {
            checked++;
            outcomes.merge(after.outcome(), 1L, Long::sum);
            kinds.forEach(kind -> events.merge(kind.substring(kind.indexOf(' ') + 1), 1L, Long::sum));
        }
    }

    /** What a step came to, in its types alone. */
    private static String situation(Step step) {
        return step.phase().getClass().getSimpleName() + "/" + step.outcome() + "/" + step.cause().map(Enum::name).orElse("-")
                + "/" + step.lilbee().state() + "/" + step.word().getClass().getSimpleName() + "/" + step.serving();
    }

    private static List<String> kinds(List<PodEvent> made) {
        return made.stream().map(e -> (e.warning() ? "Warning " : "Normal ") + e.reason()).toList();
    }

    private static GateSnapshot snapshot(Step step, Observation seen) {
        return GateSnapshot.of(KeeperPhase.RUNNING, new LilbeePaths(Path.of("/"), Path.of("/data"), Path.of("/data/lancedb"), Optional.empty(), "test"), step.phase(),
                Optional.of(step), Optional.of(seen), OptionalLong.empty(), m -> Instant.ofEpochSecond(0, m.nanos()),
                Optional.empty(), OptionalLong.empty());
    }

    private static GateSnapshot withoutNote(GateSnapshot s) {
        return new GateSnapshot(s.phase(), s.paths(), s.gate(), s.server(), s.started(), s.serving(), Optional.empty(),
                s.lease(), s.warm(), s.settled());
    }

    /** The same step, every sentence in it said otherwise. */
    private static Step reworded(Step step) {
        List<GateAction> actions = step.actions().stream().map(a -> a instanceof GateAction.Say say
                ? new GateAction.Say(reworded(say.word())) : a).toList();
        return new Step(step.phase(), actions, step.outcome(), step.cause(), reworded(step.reason()), step.lilbee(),
                reworded(step.word()), step.settled());
    }

    private static Word reworded(Word word) {
        return word instanceof Word.Stop stop ? new Word.Stop(reworded(stop.reason())) : word;
    }

    private static String reworded(String sentence) {
        return "in other words, " + new StringBuilder(sentence).reverse();
    }
}
