package dev.warden.cli;

import dev.warden.config.LilbeeEnvironment;
import dev.warden.config.LilbeePaths;
import dev.warden.config.WardenConfig;
import dev.warden.engine.EngineDirs;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** {@code --engine-dir}, overriding {@code warden.engine-dir}: the machine slot of lilbee's engine dirs. */
public class EngineDirOption {

    @Option(names = "--engine-dir", paramLabel = "DIR",
            description = "lilbee's machine engine slot (default: warden.engine-dir, else $LILBEE_ENGINE_DIR, else"
                    + " $XDG_STATE_HOME/lilbee/engine, else ~/.local/state/lilbee/engine). The data root's overflow"
                    + " dir (<data root>/data/engine) and the data dir itself (older lilbee versions) are covered too.")
    Path engineDir;

    EngineDirs resolve(WardenConfig config, LilbeePaths lilbee) {
        LilbeeEnvironment env = LilbeeEnvironment.current();
        Path slot = engineDir != null ? env.realpath().of(engineDir)
                : config.engineDir().map(env.realpath()::of).orElseGet(env::engineSlot);
        return EngineDirs.of(slot, lilbee.dataRoot(), lilbee.dataDir());
    }
}
