package dev.warden.hold;

import java.nio.file.Path;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * One look at a lock from outside: whether anyone holds it, who, and (for the scope) whom that
 * holder serves.
 *
 * @param state {@code free}, {@code held}, {@code absent} (no lock file yet) or {@code error}
 */
public record LockLook(LockKind kind, Path path, String state, OptionalLong holderPid, Optional<ScopeOwner> owner,
        Optional<String> error) {
}
