package dev.warden.reaper;

import java.time.Instant;
import java.util.Optional;

/**
 * The reaper as published to status and the probes (an immutable snapshot; no file I/O to read).
 *
 * @param watching whether this warden holds the reaper lock and runs the rule
 * @param detail why it does or does not watch
 * @param engineExpected whether an engine is recorded or configured (readiness then needs it to answer)
 * @param engineAnswers whether every recorded or configured engine answered at the last pass
 * @param liveUsers how many users held the engine at the last pass
 * @param keepWarm how many keep-warm markers there were at the last pass
 * @param unused an engine held with no user at the last pass, and for how long the rule lets it be
 */
public record ReaperStatus(boolean watching, String detail, Optional<Instant> idleSince, Optional<PassOutcome> lastPass,
        Optional<PassOutcome> lastAction, Optional<Instant> lastActionAt, boolean engineExpected, boolean engineAnswers,
        int liveUsers, int keepWarm, Optional<Unused> unused) {

    public static ReaperStatus notStarted() {
        return new ReaperStatus(false, "not watching", Optional.empty(), Optional.empty(), Optional.empty(),
                Optional.empty(), false, false, 0, 0, Optional.empty());
    }
}
