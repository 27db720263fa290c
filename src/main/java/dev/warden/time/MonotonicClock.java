package dev.warden.time;

/** The monotonic clock the gate runs on: {@link #SYSTEM} in warden, simulated time in the simulation and the tests. */
@FunctionalInterface
public interface MonotonicClock {

    MonotonicClock SYSTEM = () -> new Moment(System.nanoTime());

    Moment now();
}
