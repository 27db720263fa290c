package dev.warden.testing;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;

/** A clock a test moves by hand, so idle windows pass without sleeping. */
public final class MutableClock implements InstantSource {

    private volatile Instant now = Instant.parse("2026-11-29T12:00:00Z");

    @Override
    public Instant instant() {
        return now;
    }

    public void advance(Duration by) {
        now = now.plus(by);
    }
}
