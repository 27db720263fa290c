package dev.warden.engine;

import java.util.Optional;

/** The key llama-swap's {@code apiKeys} asks for, if any: read once, at start. */
public record EngineApiKey(Optional<String> value) {

    public boolean isSet() {
        return value.isPresent();
    }

    /** Never the key itself: a record's default toString would put it in a log line. */
    @Override
    public String toString() {
        return isSet() ? "EngineApiKey[set]" : "EngineApiKey[none]";
    }
}
