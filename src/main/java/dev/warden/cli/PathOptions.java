package dev.warden.cli;

import dev.warden.config.LilbeePaths;
import dev.warden.config.WardenConfig;
import java.nio.file.Path;
import java.util.Optional;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** The directory options of the commands that hold lilbee's locks; each overrides its configuration property. */
public class PathOptions {

    @Mixin
    RootOptions root;

    @Option(names = "--scope", paramLabel = "DIR",
            description = "Also hold DIR/server.scope.lock, one server per shared scope"
                    + " (default: warden.scope-dir, else $LILBEE_EXCLUSIVE_SCOPE, else no scope lock).")
    Path scope;

    LilbeePaths resolve(WardenConfig config) {
        return root.resolve(config, Optional.ofNullable(scope));
    }
}
