package dev.warden.gate;

/**
 * What one gate round came to, as a type beside its sentence: the Events, the log's level and when the log speaks are
 * chosen by it ({@link GateEvents}, {@link GateDecision.Step#warns()}, {@link GateDecision.Step#isNewsAfter}), never by
 * the sentence, which only says it to a person.
 */
public enum GateOutcome {
    /** Lease mode, just started: not a word to the supervisor until the Lease says whether this warden still leads. */
    ASKING_THE_LEASE,
    /** Not elected ({@link Cause} says why). */
    STANDING_BY,
    /** Not elected, after a handover or a step-down: not contending for a while, so that a standby takes the gate. */
    HOLDING_BACK,
    /** Elected until the round before, not any more ({@link Cause} says why). */
    NOT_ELECTED_ANY_MORE,
    /** Elected on a gate file it has not watched for the settle: no lilbee starts before. */
    SETTLING,
    /** Elected: server.lock is looked at before lilbee may start. */
    LOOKING,
    /** Elected: server.lock cannot be looked at (its failure names the path and the fix). */
    SERVER_LOCK_FAILED,
    /** Elected: another process than this pod's lilbee holds server.lock, so lilbee would wait for it and exit 3. */
    SERVER_LOCK_HELD,
    /** Elected, server.lock free: lilbee may start. */
    MAY_START,
    /** Elected, this pod's lilbee starting. */
    STARTING,
    /** Elected, this pod's lilbee holding server.lock: this pod serves. */
    SERVING,
    /** Elected, this pod's lilbee stopped as unproven, on a replaced file, or under another gate's lock. */
    FENCING,
    /** Elected, unserved past the handover time: no permit is given until every one given has run out. */
    HANDING_OVER,
    /** Let the gate go: this pod has not served for the handover time and runs no lilbee. */
    HANDED_OVER,
    /** Asked to step down, in lease mode: lilbee stops before the Lease goes. */
    STEPPING_DOWN,
    /** Stepped down, as asked: lilbee stops and the gate goes to a standby. */
    STEPPED_DOWN;

    /** Why a warden is not elected. */
    public enum Cause {
        /** Lease mode: it does not lead the Lease. */
        NO_LEASE,
        /** The gate file it holds is no longer the one at the path. */
        GATE_REPLACED,
        /** The gate lock it held vanished under it. */
        GATE_LOST,
        /** Another warden holds the gate lock. */
        HELD_ELSEWHERE,
        /** It holds a gate lock not proven to exclude the other pods. */
        UNPROVEN,
        /** The gate file cannot be locked at all. */
        UNLOCKABLE
    }
}
