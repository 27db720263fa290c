package dev.warden.time;

import java.time.Duration;

/**
 * A moment on the kernel's monotonic clock ({@code CLOCK_MONOTONIC}, which {@link System#nanoTime} reads on Linux), in
 * nanoseconds: what the gate's settles and deadlines are measured on, so a jump of the wall clock changes none of them.
 * warden's and lilbee's containers share the kernel, and so this clock: a permit's end sent to lilbee's supervisor
 * means the same moment there.
 */
public record Moment(long nanos) implements Comparable<Moment> {

    public Moment plus(Duration duration) {
        return new Moment(nanos + duration.toNanos());
    }

    public Moment minus(Duration duration) {
        return new Moment(nanos - duration.toNanos());
    }

    /** How long after {@code earlier} this is (negative when it is before). */
    public Duration since(Moment earlier) {
        return Duration.ofNanos(nanos - earlier.nanos);
    }

    public boolean isBefore(Moment other) {
        return nanos - other.nanos < 0;
    }

    public static Moment earliest(Moment a, Moment b) {
        return a.isBefore(b) ? a : b;
    }

    @Override
    public int compareTo(Moment other) {
        return Long.compare(nanos - other.nanos, 0);
    }

    @Override
    public String toString() {
        return "t" + nanos / 1_000_000 + "ms";
    }
}
