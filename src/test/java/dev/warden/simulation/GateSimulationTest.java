package dev.warden.simulation;

import static org.junit.jupiter.api.Assertions.fail;

import dev.warden.gate.GateDecision;
import dev.warden.gate.WordingCheck;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Gate mode, simulated: seed after seed (Sim draws each run from its seed: the election, the pods, the chaos), at
 * least {@code warden.sim.steps} steps in all (10,000,000: about 220 runs), on every core, every step checked for two
 * lilbees serving, the quiet for a pod serving again within the recovery bound, and every run's end for exactly one pod
 * serving steadily and every pod able to, and every decision made again with its sentences reworded to the same Events,
 * log levels and metrics ({@link WordingCheck}). A violation names its
 * seed and the events that led to it; {@code -Dwarden.sim.seed=N} replays that one seed and prints its whole trace.
 */
class GateSimulationTest {

    static final long STEPS = Long.getLong("warden.sim.steps", 10_000_000);

    @Test
    void neverTwoLilbeesAndAlwaysOneServingAfterTheFaults() {
        Long replay = Long.getLong("warden.sim.seed");
        // -Dwarden.sim.focus=LEASE, NODE_LOCAL_FILES, LEASE_HANDOVERS_KILLED or CRASH_LOOPS: the runs a mutation search
        // looks at, for a replay, or for the whole search with every fix in place.
        Sim.Focus focus = Sim.Focus.valueOf(System.getProperty("warden.sim.focus", "DRAWN"));
        if (replay != null) {
            // -Dwarden.sim.mutations=A,B (and a focus) replays a seed with fixes undone, as GateMutationSoak runs them.
            java.util.Set<Sim.Mutation> mutations = Sim.none();
            for (String name : System.getProperty("warden.sim.mutations", "").split(",")) {
                if (!name.isBlank()) {
                    mutations.add(Sim.Mutation.valueOf(name.strip()));
                }
            }
            Sim.Outcome outcome = Sim.run(replay, Long.MAX_VALUE, Integer.MAX_VALUE, mutations, GateDecision::new,
                    dev.warden.gate.pod.LilbeeSwitch::open, focus);
            System.out.println(String.join("\n", outcome.trace()));
            outcome.violation().ifPresentOrElse(v -> fail(v.report()),
                    () -> System.out.println("seed " + replay + ": " + outcome.steps() + " steps, no violation"));
            return;
        }
        long began = System.nanoTime();
        long first = Long.getLong("warden.sim.first-seed", 1);
        // Every decision is also checked to do the same with its sentences reworded.
        WordingCheck wording = new WordingCheck();
        Map<Long, Sim.Outcome> outcomes = Sim.runSeeds(first, STEPS,
                seed -> Sim.run(seed, Long.MAX_VALUE, 300, Sim.none(), wording::decision, dev.warden.gate.pod.LilbeeSwitch::open,
                        focus), o -> o.violation().isPresent());
        // A violation fails, the lowest seed's first; else the seeds a search one at a time takes (from the first,
        // until the budget), whatever the cores.
        outcomes.entrySet().stream().filter(e -> e.getValue().violation().isPresent()).min(Map.Entry.comparingByKey())
                .ifPresent(e -> fail(e.getValue().violation().get().report()));
        long steps = 0;
        long seed = first;
        long longestUnserved = 0;
        long longestSeed = 0;
        for (; steps < STEPS; seed++) {
            Sim.Outcome outcome = outcomes.get(seed);
            steps += outcome.steps();
            if (outcome.longestUnserved() > longestUnserved) {
                longestUnserved = outcome.longestUnserved();
                longestSeed = seed;
            }
        }
        System.out.printf(Locale.ROOT, "SIMULATION %d runs (seeds %d to %d, %s), %,d steps, no violation, %.1f s; the longest"
                + " unserved with a pod able to serve: %.1f s (seed %d)%n", seed - first, first, seed - 1, focus, steps,
                (System.nanoTime() - began) / 1e9, longestUnserved / 1e9, longestSeed);
        System.out.println("SIMULATION wording: " + wording.summary());
        if (STEPS >= 10_000_000 && focus == Sim.Focus.DRAWN) {
            // A shorter or a focused search may not meet every outcome: the default one does.
            wording.assertCovered();
        }
    }
}
