package dev.warden.reaper;

import dev.warden.engine.EngineRecord;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * The last-user-out rule as one pure decision (seed engine_reaper.py), from what a pass sees and since when the engine
 * has idled: {@link Reaper#pass()} acts on it, {@link Reaper#dryRun()} says it, so the two cannot drift apart.
 */
final class ReaperRule {

    private ReaperRule() {
    }

    /**
     * What a pass sees.
     *
     * @param usersLive whether a user holds the engine
     * @param recorded the engines lilbee recorded in this dir
     * @param external whether this reaper looks after a llama-swap lilbee did not start ({@code warden.engine.url})
     * @param keepWarmMarked whether a keep-warm marker is in the dir
     * @param idleTtl how long a kept-warm engine may idle before its weights are unloaded; empty: for ever (read only of
     *     a kept-warm engine)
     * @param stoppable the recorded engines no other dir both records and has live users for (looked at only where the
     *     rule may stop them)
     */
    record Look(boolean usersLive, List<EngineRecord> recorded, boolean external, boolean keepWarmMarked,
            Optional<Duration> idleTtl, List<EngineRecord> stoppable) {

        /** A recorded engine with a keep-warm marker, or, none recorded, an engine lilbee did not start. */
        boolean keptWarm() {
            return recorded.isEmpty() ? external : keepWarmMarked;
        }

        Look withStoppable(List<EngineRecord> engines) {
            return new Look(usersLive, recorded, external, keepWarmMarked, idleTtl, engines);
        }

        Look withIdleTtl(Optional<Duration> ttl) {
            return new Look(usersLive, recorded, external, keepWarmMarked, ttl, stoppable);
        }
    }

    /** What the rule decides. */
    sealed interface Decision {

        /** A user holds the engine: the idle clock restarts. */
        record UsersLive() implements Decision {
        }

        /** Nothing to stop or unload, and why. */
        record NothingToDo(String why) implements Decision {
        }

        /** A kept-warm engine's weights were unloaded already. */
        record UnloadedEarlier() implements Decision {
        }

        /** A kept-warm engine idles, its weights kept: for how long it has, of how long it may. */
        record Idling(String why) implements Decision {
        }

        /** A kept-warm engine has idled its time: its weights are unloaded. */
        record Unload(Duration idle) implements Decision {
        }

        /** A kept-warm engine's unload was refused while it still answers: a new idle window starts. */
        record UnloadRefused(String refusals) implements Decision {
        }

        /** Every user is gone (or the kept-warm engine stopped answering): these engines are stopped. */
        record Stop(List<EngineRecord> engines, String why) implements Decision {
        }
    }

    /**
     * The decision.
     *
     * @param idleSince when a kept-warm engine's idle time began, if it has
     * @param unloaded whether its weights were unloaded since
     */
    static Decision decide(Look look, Optional<Instant> idleSince, boolean unloaded, Instant now) {
        if (look.usersLive()) {
            return new Decision.UsersLive();
        }
        if (look.keptWarm()) {
            if (unloaded) {
                return new Decision.UnloadedEarlier();
            }
            Duration idle = Duration.between(idleSince.orElse(now), now);
            if (look.idleTtl().isEmpty()) {
                return new Decision.Idling("idle for " + idle.toSeconds() + " s; a keep-warm marker of 0 minutes keeps the"
                        + " weights loaded");
            }
            if (idle.compareTo(look.idleTtl().get()) < 0) {
                return new Decision.Idling("idle for " + idle.toSeconds() + " s of " + look.idleTtl().get().toSeconds() + " s");
            }
            return new Decision.Unload(idle);
        }
        if (look.recorded().isEmpty()) {
            return new Decision.NothingToDo("no user and no engine");
        }
        return stop(look, "every user is gone");
    }

    /**
     * After a kept-warm engine's unload was refused: the recorded engines are stopped when none of them answers any more
     * (they are gone, and their records with them), else the refusal stands. An engine lilbee did not start has no
     * record, and is never stopped.
     */
    static Decision afterRefusedUnload(Look look, boolean anyAnswers, String refusals) {
        return !look.recorded().isEmpty() && !anyAnswers ? stop(look, "it stopped answering")
                : new Decision.UnloadRefused(refusals);
    }

    /** The recorded engines stopped (for {@code why}), but those another dir's live users hold. */
    static Decision stop(Look look, String why) {
        if (look.stoppable().isEmpty()) {
            return new Decision.NothingToDo("no user here; the engine recorded here is also recorded in another engine dir"
                    + " whose users are live, and that dir's rule decides");
        }
        return new Decision.Stop(look.stoppable(), why);
    }
}
