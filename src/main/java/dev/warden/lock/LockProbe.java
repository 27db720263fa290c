package dev.warden.lock;

/** What one look at a lock file found. */
public enum LockProbe {
    /** No lock file: nobody has ever taken this lock here. */
    ABSENT,
    /** The file exists and nobody holds it. */
    FREE,
    /** Another process holds it. */
    HELD
}
