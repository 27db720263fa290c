package dev.warden.reaper;

import java.time.Duration;
import java.time.Instant;

/**
 * An engine held with no user: since when, and how long the last-user-out rule lets that last (a kept-warm
 * engine's idle time, {@link #NEVER} for a keep-warm marker of 0 minutes, zero for one being stopped). One
 * held well past its limit is one the reaper failed to stop or unload, which the alerts look for.
 */
public record Unused(Instant since, Duration limit) {

    /** A keep-warm marker of 0 minutes: the weights stay loaded for as long as the engine runs. */
    public static final Duration NEVER = Duration.ofSeconds(Long.MAX_VALUE);

    /** How much longer than its limit the engine has been held at {@code now}; negative while within it. */
    public Duration overdue(Instant now) {
        return limit.equals(NEVER) ? Duration.ofSeconds(Long.MIN_VALUE) : Duration.between(since, now).minus(limit);
    }
}
