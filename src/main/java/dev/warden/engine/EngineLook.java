package dev.warden.engine;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * One look at an engine dir: who uses it, whether it is kept warm, and each recorded engine.
 *
 * @param role why lilbee uses the dir: {@code slot}, {@code overflow} or {@code legacy} (see {@link EngineDirs})
 * @param exists whether the dir exists (lilbee creates the overflow dir only when it needs it)
 * @param reaperLock "free", or "held" with the holder's pid where the kernel's lock table shows it
 * @param unreadable files named like records that are not records, each with why
 */
public record EngineLook(String role, Path dir, boolean exists, List<String> liveUsers, List<String> keepWarmMarkers, List<RecordLook> records,
        List<EngineRecords.Unreadable> unreadable, String reaperLock) {

    /**
     * One recorded engine.
     *
     * @param ours whether its pid is still the llama-swap that was recorded ("gone" when it has exited)
     * @param answers whether its proxy answers {@code /running}
     */
    public record RecordLook(String file, String group, long pid, Optional<Long> pgid, Optional<Integer> proxyPort,
            String ours, boolean answers) {
    }
}
