package dev.warden.cli;

import dev.warden.config.LilbeeEnvironment;
import dev.warden.config.LilbeePaths;
import dev.warden.config.WardenConfig;
import java.nio.file.Path;
import java.util.Optional;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** Which data root: {@code --data-root} and {@code --global}, as {@code lilbee --data-dir} and {@code --global}. */
public class RootOptions {

    @Option(names = "--data-root", paramLabel = "DIR",
            description = "lilbee's data root, as `lilbee --data-dir DIR` names it (default: warden.data-root, else"
                    + " where `lilbee serve` would put it here: $LILBEE_DATA, else $LILBEE_DATA_ROOT, else data_root"
                    + " in config.toml, else a .lilbee/ directory above the working directory, else"
                    + " $XDG_DATA_HOME/lilbee, else ~/.local/share/lilbee). The data dir is DIR/data.")
    Path dataRoot;

    @Option(names = {"-g", "--global"},
            description = "Use lilbee's default data root ($XDG_DATA_HOME/lilbee, else ~/.local/share/lilbee),"
                    + " ignoring $LILBEE_DATA, $LILBEE_DATA_ROOT and any .lilbee/ directory, as `lilbee --global` does.")
    boolean global;

    @Spec(Spec.Target.MIXEE)
    CommandSpec command;

    LilbeePaths resolve(WardenConfig config, Optional<Path> scope) {
        if (global && dataRoot != null) {
            throw new ParameterException(command.commandLine(), "--global and --data-root name two data roots: give one of them.");
        }
        return LilbeePaths.of(config, LilbeeEnvironment.current(),
                new LilbeePaths.Overrides(Optional.ofNullable(dataRoot), scope, global));
    }
}
