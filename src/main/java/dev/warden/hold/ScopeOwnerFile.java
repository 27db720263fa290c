package dev.warden.hold;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.warden.lock.CheckedDir;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The scope's owner file, {@code server.scope.owner.json}: {@code {"data_dir": ..., "pid": ...}}.
 * Written only while the scope lock is held, atomically (temp file and rename) so a reader never
 * sees half of it, and removed before the lock is released so a newcomer never reads a stale one.
 */
public class ScopeOwnerFile {

    /** Owner files are a line of JSON; anything much larger is not one, and is not read whole. */
    private static final int MAX_SIZE = 64 * 1024;

    private final ObjectMapper json;

    public ScopeOwnerFile(ObjectMapper json) {
        this.json = json;
    }

    /**
     * Writes the owner file through a temporary file created exclusively under an unpredictable
     * name in the checked scope dir, renamed into place: nothing a neighbour links in is followed.
     */
    public void write(Path ownerFile, Path dataDir, long pid) throws IOException {
        ObjectNode node = json.createObjectNode();
        node.put("data_dir", dataDir.toString());
        node.put("pid", pid);
        try (CheckedDir dir = CheckedDir.open(ownerFile.getParent())) {
            dir.replace(ownerFile.getFileName().toString(), json.writeValueAsBytes(node));
        }
    }

    /** Builds an owner file's bytes without writing them, so the first real write is not a cold one. */
    public void warm(Path dataDir, long pid) {
        try {
            json.writeValueAsBytes(json.createObjectNode().put("data_dir", dataDir.toString()).put("pid", pid));
        } catch (IOException e) {
            // only a warm-up: the real write reports its own errors
        }
    }

    public void remove(Path ownerFile) throws IOException {
        try (CheckedDir dir = CheckedDir.open(ownerFile.getParent())) {
            dir.delete(ownerFile.getFileName().toString());
        }
    }

    /** The recorded owner; {@link ScopeOwner#UNKNOWN} when the file is absent or unreadable, never an error. */
    public ScopeOwner read(Path ownerFile) {
        try {
            byte[] bytes;
            // Capped as it is read, from the checked dir, never through a link or a FIFO swapped in.
            try (CheckedDir dir = CheckedDir.open(ownerFile.getParent())) {
                bytes = dir.read(ownerFile.getFileName().toString(), MAX_SIZE);
            }
            if (bytes.length > MAX_SIZE) {
                return ScopeOwner.UNKNOWN;
            }
            JsonNode node = json.readTree(bytes);
            if (node == null || !node.isObject() || !node.path("data_dir").isTextual()) {
                return ScopeOwner.UNKNOWN;
            }
            JsonNode pid = node.path("pid");
            return new ScopeOwner(Optional.of(node.get("data_dir").asText()),
                    pid.canConvertToLong() && pid.isIntegralNumber() && pid.asLong() > 0
                            ? OptionalLong.of(pid.asLong()) : OptionalLong.empty());
        } catch (IOException | RuntimeException e) {
            return ScopeOwner.UNKNOWN;
        }
    }
}
