package dev.warden.gate;

import dev.warden.events.PodEvent;
import dev.warden.gate.GateAction.Word;
import dev.warden.gate.GateDecision.LilbeeState;
import dev.warden.gate.GateDecision.Step;
import dev.warden.gate.GatePhase.Elected;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The Kubernetes Events one gate round makes, from the decision before it to its own: elected (and settling first,
 * with why), serving, stepped down, handed over, no longer elected, a lilbee fenced (its pid and why). A pure function of
 * the two decisions' outcomes (their sentences are only the Events' messages): the same round decides the same Events,
 * in the simulation too.
 */
public final class GateEvents {

    /** The states in which warden stops a lilbee of its own pod: fenced. */
    private static final Set<LilbeeState> FENCED = EnumSet.of(LilbeeState.UNPROVEN, LilbeeState.ON_REPLACED_FILE,
            LilbeeState.UNDER_ANOTHER_GATE);

    private GateEvents() {
    }

    public static List<PodEvent> between(Optional<Step> before, Step after) {
        List<PodEvent> events = new ArrayList<>();
        boolean wasElected = before.map(b -> b.phase() instanceof Elected).orElse(false);
        if (!wasElected && after.phase() instanceof Elected) {
            events.add(PodEvent.normal("Elected", after.reason()));
            if (after.outcome() == GateOutcome.SETTLING && after.word() instanceof Word.Stop stop) {
                events.add(PodEvent.normal("Settling", stop.reason()));
            }
        }
        if (after.serving() && !before.map(Step::serving).orElse(false)) {
            events.add(PodEvent.normal("Serving", "lilbee (pid " + after.lilbee().pid() + ") holds server.lock: this pod serves"));
        }
        if (wasElected && !(after.phase() instanceof Elected)) {
            events.add(switch (after.outcome()) {
                case STEPPED_DOWN -> PodEvent.normal("SteppedDown", after.reason());
                case HANDED_OVER -> PodEvent.warning("HandedOver", after.reason());
                default -> PodEvent.warning("NotElected", after.reason());
            });
        }
        if (FENCED.contains(after.lilbee().state()) && after.word() instanceof Word.Stop stop
                && !before.filter(b -> b.lilbee().equals(after.lilbee()) && b.word() instanceof Word.Stop).isPresent()) {
            events.add(PodEvent.warning("Fenced", stop.reason()));
        }
        return events;
    }
}
