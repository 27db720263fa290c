package dev.warden.lock;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A lock that cannot be taken for a reason other than another holder: the message names the
 * path and what to do about it.
 */
public final class LockException extends IOException {

    private final boolean noLocking;

    public LockException(String message) {
        this(message, null, false);
    }

    public LockException(String message, Throwable cause) {
        this(message, cause, false);
    }

    private LockException(String message, Throwable cause, boolean noLocking) {
        super(message, cause);
        this.noLocking = noLocking;
    }

    /**
     * {@code dir}'s filesystem cannot lock files at all: lilbee's own sentence for it (its {@code serve} refuses the
     * data dir with the same words), then {@code detail}. No retry mends it; only another volume does.
     */
    static LockException noLocking(Path dir, String detail, Throwable cause) {
        return new LockException(dir + " is on a filesystem that does not support file locking. Move it to a local disk."
                + " (" + detail + ")", cause, true);
    }

    /** Whether the filesystem cannot lock at all (ENOLCK, ENOSYS), as opposed to a lock file that cannot be had now. */
    public boolean noLocking() {
        return noLocking;
    }
}
