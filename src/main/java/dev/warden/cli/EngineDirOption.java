package dev.warden.cli;

import dev.warden.config.WardenConfig;
import dev.warden.engine.EngineDir;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** {@code --engine-dir}, overriding {@code warden.engine-dir}. */
public class EngineDirOption {

    @Option(names = "--engine-dir", paramLabel = "DIR",
            description = "lilbee's engine dir (default: warden.engine-dir, i.e. $LILBEE_ENGINE_DIR, else"
                    + " $XDG_STATE_HOME/lilbee/engine, else ~/.local/state/lilbee/engine).")
    Path engineDir;

    EngineDir resolve(WardenConfig config) {
        Path dir = (engineDir != null ? engineDir : config.engineDir()).toAbsolutePath().normalize();
        try {
            dir = dir.toRealPath();
        } catch (java.io.IOException e) {
            // not there yet: lilbee creates it with its first engine
        }
        return new EngineDir(dir);
    }
}
