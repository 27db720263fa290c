package dev.warden.hold;

import java.nio.file.Path;

/** One lock's path and state, in a published snapshot. */
public record LockStatus(LockKind kind, Path path, LockState state) {

    public boolean held() {
        return state instanceof LockState.Held;
    }
}
