package dev.warden.simulation;

import java.util.ArrayList;
import java.util.List;

/**
 * The lilbee supervisor's rules (helm/warden/files/lilbee-supervisor.py, its class Rules), as the simulation runs them:
 * held to the same table of cases (src/test/python/supervisor_cases.json) as the supervisor itself, by
 * SupervisorRulesTest here and test_lilbee_supervisor.py there. Times in nanoseconds on the monotonic clock.
 */
final class SupervisorRules {

    enum Lilbee {
        NONE, RUNNING, STOPPING
    }

    /**
     * What the supervisor does: start, term, kill, signal (with its number), release (the gate lock), exit (with a code),
     * warm (keep a prepared process).
     */
    record Action(String kind, int arg) {
        static Action of(String kind) {
            return new Action(kind, 0);
        }

        @Override
        public String toString() {
            return kind.equals("signal") || kind.equals("exit") ? kind + ":" + arg : kind;
        }
    }

    private final long permit;
    final long grace;
    private final long firstPause;
    private final long maxPause;
    private final long calm;
    Lilbee lilbee = Lilbee.NONE;
    long permitUntil;
    boolean hasGate;
    private long startedAt;
    private long stoppingSince;
    private boolean killed;
    private long nextStart;
    private long pause;
    Integer terminating;
    private final boolean prepares;
    private final boolean spare;
    private final long prepareAfter;
    private long prepareFrom;

    /**
     * {@code notBefore}: no lilbee starts earlier (the supervisor's start plus its --start-after). With {@code prepares}
     * (--prepare), a prepared process is wanted from {@code prepareFrom} (the supervisor's start) on, and again
     * {@code prepareAfter} after each lilbee's start or exit; with {@code spare}, while lilbee runs too.
     */
    SupervisorRules(long permit, long grace, long firstPause, long maxPause, long calm, long notBefore, boolean prepares,
            boolean spare, long prepareAfter, long prepareFrom) {
        this.prepares = prepares;
        this.spare = spare;
        this.prepareAfter = prepareAfter;
        this.prepareFrom = prepareFrom;
        this.permit = permit;
        this.grace = grace;
        this.firstPause = firstPause;
        this.maxPause = maxPause;
        this.calm = calm;
        this.pause = 0;
        this.nextStart = notBefore;
    }

    /**
     * The chart's supervisor: the permit's longest and grace as given, a first crash started again at once, then a pause
     * of 1 s doubling to 30 s, back to none after a calm 10 s; no lilbee before {@code notBefore}; a prepared process
     * from {@code started} on, none within {@code prepareAfter} of a lilbee's start or exit, and a spare while lilbee
     * runs.
     */
    static SupervisorRules chart(long permit, long grace, long notBefore, long prepareAfter, long started) {
        return new SupervisorRules(permit, grace, 1_000_000_000L, 30_000_000_000L, 10_000_000_000L, notBefore, true, true,
                prepareAfter, started);
    }

    boolean acceptsGate() {
        return lilbee == Lilbee.NONE && terminating == null;
    }

    /** One event, then the timers; last, {@code warm} whenever a prepared process is wanted. */
    List<Action> step(long now, String event, long arg) {
        List<Action> actions = event(now, event, arg);
        if (actions.contains(Action.of("start"))) {
            prepareFrom = now + prepareAfter;
        }
        if (prepares && terminating == null && now >= prepareFrom && (lilbee == Lilbee.NONE || spare)) {
            actions.add(Action.of("warm"));
        }
        return actions;
    }

    private List<Action> event(long now, String event, long arg) {
        List<Action> actions = new ArrayList<>();
        switch (event) {
            case "start" -> {
                if (acceptsGate()) {
                    hasGate = true;
                    permitUntil = Math.min(arg, now + permit);
                } else if (lilbee == Lilbee.RUNNING) {
                    permitUntil = Math.min(arg, now + permit);
                }
            }
            case "go" -> {
                if (lilbee == Lilbee.RUNNING) {
                    permitUntil = Math.min(arg, now + permit);
                }
            }
            case "stop" -> permitUntil = 0;
            case "exited" -> {
                boolean crashed = lilbee == Lilbee.RUNNING;
                lilbee = Lilbee.NONE;
                prepareFrom = now + prepareAfter;
                permitUntil = 0;
                if (hasGate) {
                    hasGate = false;
                    actions.add(Action.of("release"));
                }
                if (now - startedAt >= calm) {
                    pause = 0;
                }
                if (crashed) {
                    nextStart = now + pause;
                    pause = Math.min(Math.max(pause * 2, firstPause), maxPause);
                } else {
                    nextStart = now;
                }
                if (terminating != null) {
                    actions.add(new Action("exit", (int) arg));
                    return actions;
                }
            }
            case "signal" -> {
                terminating = (int) arg;
                if (lilbee == Lilbee.NONE) {
                    if (hasGate) {
                        hasGate = false;
                        actions.add(Action.of("release"));
                    }
                    actions.add(new Action("exit", 0));
                    return actions;
                }
                actions.add(new Action("signal", (int) arg));
            }
            case "tick" -> {
            }
            default -> throw new IllegalArgumentException("unknown event " + event);
        }
        timers(now, actions);
        return actions;
    }

    private void timers(long now, List<Action> actions) {
        if (lilbee == Lilbee.RUNNING && now >= permitUntil) {
            lilbee = Lilbee.STOPPING;
            stoppingSince = now;
            killed = false;
            actions.add(Action.of("term"));
        } else if (lilbee == Lilbee.STOPPING && !killed && now >= stoppingSince + grace) {
            killed = true;
            actions.add(Action.of("kill"));
        } else if (lilbee == Lilbee.NONE && hasGate) {
            if (now >= permitUntil) {
                hasGate = false;
                actions.add(Action.of("release"));
            } else if (now >= nextStart && terminating == null) {
                lilbee = Lilbee.RUNNING;
                startedAt = now;
                actions.add(Action.of("start"));
            }
        }
    }
}
