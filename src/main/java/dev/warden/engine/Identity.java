package dev.warden.engine;

/** Whether a recorded pid is still the llama-swap lilbee recorded, checked before any signal. */
public sealed interface Identity {

    /** It is: same start time (when recorded) and its command names llama-swap. */
    record Ours(ProcessInfo process) implements Identity {
    }

    /** No such process: the engine has exited. */
    record Gone() implements Identity {
    }

    /** A live process that is not our engine (a reused pid, or one warden must never signal). */
    record Stranger(String reason) implements Identity {
    }
}
