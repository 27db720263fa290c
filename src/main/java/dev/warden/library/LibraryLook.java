package dev.warden.library;

import java.util.Optional;

/**
 * One look at the library's own locks: is a sync (or import) running, is a reset running, and is
 * the LanceDB write lock held.
 *
 * @param writeLock {@code free}, {@code held}, {@code absent} (no lock file yet) or {@code error}
 * @param error why the sync mark could not be read, when it could not
 */
public record LibraryLook(boolean syncRunning, boolean resetRunning, String writeLock, Optional<String> error) {
}
