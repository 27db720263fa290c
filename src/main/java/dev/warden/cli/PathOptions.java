package dev.warden.cli;

import dev.warden.config.LilbeePaths;
import dev.warden.config.WardenConfig;
import java.nio.file.Path;
import java.util.Optional;
import picocli.CommandLine.Option;

/** The directory options every command shares; each overrides its configuration property. */
public class PathOptions {

    @Option(names = "--data-root", paramLabel = "DIR",
            description = "lilbee's data root (default: warden.data-root, i.e. $LILBEE_DATA, else"
                    + " $XDG_DATA_HOME/lilbee, else ~/.local/share/lilbee). The data dir is DIR/data"
                    + " unless warden.data-dir or $LILBEE_DATA_DIR names another.")
    Path dataRoot;

    @Option(names = "--scope", paramLabel = "DIR",
            description = "Also hold DIR/server.scope.lock, one server per shared scope"
                    + " (default: warden.scope-dir, i.e. $LILBEE_EXCLUSIVE_SCOPE, else no scope lock).")
    Path scope;

    LilbeePaths resolve(WardenConfig config) {
        return LilbeePaths.of(config, Optional.ofNullable(dataRoot), Optional.ofNullable(scope));
    }
}
