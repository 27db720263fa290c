package dev.warden.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.warden.events.PodEvent;
import dev.warden.gate.GateAction.Word;
import dev.warden.gate.GateDecision.Lilbee;
import dev.warden.gate.GateDecision.LilbeeState;
import dev.warden.gate.GateDecision.Step;
import dev.warden.gate.GatePhase.Elected;
import dev.warden.gate.GatePhase.Standby;
import dev.warden.gate.GatePhase.Watch;
import dev.warden.time.Moment;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The Events a round's decision makes, from the one before: each transition once, chosen by its outcome, with the
 * decision's own words as the message.
 */
class GateEventsTest {

    private static final Moment T = new Moment(1_000_000_000L);
    private static final Watch WATCH = new Watch(Optional.empty(), T);
    private static final Standby STANDBY = new Standby(WATCH, T, T);
    private static final Elected ELECTED = new Elected(WATCH, T, Optional.empty(), Optional.empty(), Optional.empty(), T);
    private static final Elected SETTLING = new Elected(WATCH, T, Optional.of(T), Optional.empty(), Optional.empty(), T);

    private static Step step(GatePhase phase, GateOutcome outcome, String reason, LilbeeState lilbee, Word word) {
        return new Step(phase, List.of(), outcome, Optional.empty(), reason,
                new Lilbee(lilbee, lilbee == LilbeeState.NONE ? 0 : 4242), word, true);
    }

    private static List<String> reasons(Optional<Step> before, Step after) {
        return GateEvents.between(before, after).stream().map(PodEvent::reason).toList();
    }

    @Test
    void electedSettlingServingAndSteppedDownEachOnce() {
        Step standingBy = step(STANDBY, GateOutcome.STANDING_BY, "standing by: another warden holds the gate", LilbeeState.NONE, new Word.Stop("no"));
        Step settling = step(SETTLING, GateOutcome.SETTLING, "elected: settling", LilbeeState.NONE, new Word.Stop("settling: lilbee may start in 10 s"));
        assertEquals(List.of("Elected", "Settling"), reasons(Optional.of(standingBy), settling));
        assertEquals("settling: lilbee may start in 10 s", GateEvents.between(Optional.of(standingBy), settling).get(1).message());
        Step serving = step(ELECTED, GateOutcome.SERVING, "serving", LilbeeState.SERVING, new Word.Go(T));
        assertEquals(List.of("Serving"), reasons(Optional.of(settling), serving));
        assertEquals(List.of(), reasons(Optional.of(serving), serving), "nothing new, no Event");
        Step stepped = step(STANDBY, GateOutcome.STEPPED_DOWN, "stepped down, as asked: the gate goes to a standby", LilbeeState.SERVING,
                new Word.Stop("stepped down"));
        assertEquals(List.of("SteppedDown"), reasons(Optional.of(serving), stepped));
    }

    /** Settling is said when the settle holds lilbee back: elected beside a lilbee that is fenced, only Fenced. */
    @Test
    void settlingIsSaidOnlyWhenItKeepsLilbeeBack() {
        Step standingBy = step(STANDBY, GateOutcome.STANDING_BY, "standing by", LilbeeState.NONE, new Word.Stop("no"));
        Step fencing = step(SETTLING, GateOutcome.FENCING, "elected: stopping", LilbeeState.UNPROVEN,
                new Word.Stop("this pod's lilbee (pid 4242) has run for longer than a start takes"));
        assertEquals(List.of("Elected", "Fenced"), reasons(Optional.of(standingBy), fencing));
    }

    @Test
    void aHandoverALostElectionAndAFencedLilbeeAreWarnings() {
        Step serving = step(ELECTED, GateOutcome.SERVING, "serving", LilbeeState.SERVING, new Word.Go(T));
        List<PodEvent> handed = GateEvents.between(Optional.of(serving), step(STANDBY, GateOutcome.HANDED_OVER, "this pod has not served for 10000 ms",
                LilbeeState.NONE, new Word.Stop("handing over")));
        assertEquals(List.of(PodEvent.warning("HandedOver", "this pod has not served for 10000 ms")), handed);
        assertEquals(List.of("NotElected"), reasons(Optional.of(serving), step(STANDBY, GateOutcome.NOT_ELECTED_ANY_MORE,
                "not elected any more: the gate file this warden holds was deleted or replaced", LilbeeState.NONE,
                new Word.Stop("not elected"))));
        Step fenced = step(ELECTED, GateOutcome.FENCING, "stopping", LilbeeState.UNPROVEN, new Word.Stop("this pod's lilbee (pid 4242) has run for"
                + " longer than a start takes and holds no lock on the server.lock at the path"));
        List<PodEvent> events = GateEvents.between(Optional.of(serving), fenced);
        assertEquals(List.of(PodEvent.warning("Fenced", "this pod's lilbee (pid 4242) has run for longer than a start takes"
                + " and holds no lock on the server.lock at the path")), events);
        assertEquals(List.of(), reasons(Optional.of(fenced), fenced), "the same fence, once");
    }
}
