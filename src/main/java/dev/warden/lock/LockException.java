package dev.warden.lock;

import java.io.IOException;

/**
 * A lock that cannot be taken for a reason other than another holder: the message names the
 * path and what to do about it.
 */
public final class LockException extends IOException {

    public LockException(String message) {
        super(message);
    }

    public LockException(String message, Throwable cause) {
        super(message, cause);
    }
}
