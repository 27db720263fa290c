package dev.warden.library;

/** A lock was not had within its budget; the message says which stage ran out. */
public final class LockTimeoutException extends Exception {

    public LockTimeoutException(String message) {
        super(message);
    }
}
