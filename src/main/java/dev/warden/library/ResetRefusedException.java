package dev.warden.library;

/** A reset cannot prove that no sync or import runs on the data root; the message says what to do. */
public final class ResetRefusedException extends Exception {

    public ResetRefusedException(String message) {
        super(message);
    }

    public ResetRefusedException(String message, Throwable cause) {
        super(message, cause);
    }
}
