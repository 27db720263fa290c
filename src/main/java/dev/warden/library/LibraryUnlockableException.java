package dev.warden.library;

/** A sync or import cannot mark itself on the data root (lilbee's {@code LibraryUnlockableError}); the message says why. */
public final class LibraryUnlockableException extends Exception {

    public LibraryUnlockableException(String message, Throwable cause) {
        super(message, cause);
    }
}
