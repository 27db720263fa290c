package dev.warden.hold;

import java.util.Optional;
import java.util.OptionalLong;

/**
 * Who holds a scope lock, from its owner file: the data dir the holder serves and its pid. Both
 * empty means an unknown holder (no owner file, or one that does not parse).
 */
public record ScopeOwner(Optional<String> dataDir, OptionalLong pid) {

    public static final ScopeOwner UNKNOWN = new ScopeOwner(Optional.empty(), OptionalLong.empty());

    public boolean known() {
        return dataDir.isPresent();
    }

    /** "the server of /data/a (pid 42)", or "an unknown holder". */
    public String describe() {
        if (!known()) {
            return "an unknown holder";
        }
        return "the server of " + dataDir.get() + pid.stream().mapToObj(p -> " (pid " + p + ")").findFirst().orElse("");
    }
}
