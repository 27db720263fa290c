package dev.warden.engine;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.OptionalLong;

/**
 * One running llama-swap as lilbee recorded it in {@code llama-swap.state.<group>.<pid>.json}.
 * Only {@code pid} is required; every other field is optional and dropped when malformed.
 *
 * @param group chat, embed, rerank, vision, co-tenant, or "" for the legacy names
 * @param createdAt the process's start time, epoch seconds, for the pid-reuse check
 * @param memberPorts the llama-server ports, for the orphan sweep
 * @param proxyPort llama-swap's own port on 127.0.0.1
 * @param ownerUid the UID that owns the record file: lilbee writes it as the user that runs the engine, and
 *     a record of another user's never makes warden signal that engine
 */
public record EngineRecord(Path file, String group, long pid, OptionalLong pgid, OptionalDouble createdAt,
        Optional<String> name, List<Integer> memberPorts, OptionalInt proxyPort, OptionalInt ownerUid) {

    public EngineRecord {
        memberPorts = List.copyOf(memberPorts);
    }
}
