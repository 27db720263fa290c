package dev.warden.gate;
import dev.warden.time.Moment;


/** What the gate keeper does after a round's decision, at its edges. */
public sealed interface GateAction {

    /** Take the gate lock if it is free, else wait for it in the kernel (one wait at a time). */
    record Contend() implements GateAction {
    }

    /**
     * Close this warden's descriptors of the gate lock (held or retired). Never an unlock: a lilbee holding the same
     * open file keeps the gate locked until it is gone.
     */
    record ReleaseGate() implements GateAction {
    }

    /** Stop holding the gate lock but keep its descriptor, for an {@link UnlockGate} once this pod's lilbee is done. */
    record RetireGate() implements GateAction {
    }

    /**
     * Unlock the retired gate lock's open file, then close it: the lock ends for this pod's lilbee too, which holds the
     * same open file and has let server.lock go (it serves no more) but has not exited yet.
     */
    record UnlockGate() implements GateAction {
    }

    /** Lease mode: let the Lease go and stay out of the election long enough for another warden to take it. */
    record StepAside() implements GateAction {
    }

    /** Tell this pod's lilbee supervisor. */
    record Say(Word word) implements GateAction {
    }

    /** What warden tells lilbee's supervisor over the switch socket. */
    sealed interface Word {

        /** lilbee may start (the gate lock goes with it) and run until {@code until}, unless renewed. */
        record Start(Moment until) implements Word {
        }

        /** The running lilbee may go on until {@code until}, unless renewed; never a start. */
        record Go(Moment until) implements Word {
        }

        /** lilbee must stop now, and none may start. */
        record Stop(String reason) implements Word {
        }

        /** Nothing: a permit given before runs out on its own (a restarted warden that does not know yet). */
        record Silent() implements Word {
        }
    }
}
