package dev.warden.cli;

import java.util.concurrent.Callable;
import org.eclipse.microprofile.config.ConfigProvider;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

@Command(name = "warden", mixinStandardHelpOptions = true, versionProvider = WardenCommand.Version.class,
        subcommands = {ServeCommand.class, StatusCommand.class, ExecCommand.class, ReapCommand.class, EngineCommand.class,
            StepDownCommand.class},
        description = {
            "A sidecar for lilbee and llama-swap on a shared volume: it holds lilbee's data-dir and scope"
                    + " locks with the same flock(2) locks lilbee takes, tells Kubernetes through its"
                    + " health probes whether this pod holds them, and stops (or unloads) the llama-swap"
                    + " engine once its last user is gone.",
            "",
            "Paths default to where `lilbee serve` puts them, in the same environment and working directory:"
                    + " --global (lilbee's default root), else --data-root DIR, else $LILBEE_DATA, else"
                    + " $LILBEE_DATA_ROOT, else data_root in config.toml (of the lilbee directory found next, or of"
                    + " the default root), else the nearest lilbee directory (.lilbee/) at or above the working"
                    + " directory, else $XDG_DATA_HOME/lilbee, else ~/.local/share/lilbee. `warden status` says"
                    + " which step gave the root."
        },
        exitCodeListHeading = "%nExit codes:%n", exitCodeList = {
            "0:success (serve: stopped by SIGTERM or SIGINT, every lock released)",
            "1:an error; the message names the path and the fix",
            "2:usage error",
            "3:a lock is held by another process (serve --no-wait), as lilbee serve refuses",
        })
public class WardenCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        throw new CommandLine.ParameterException(spec.commandLine(), "Missing command: serve, status, exec, reap, engine or step-down.");
    }

    /** The version Quarkus was built with (the project's version). */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String version = ConfigProvider.getConfig().getOptionalValue("quarkus.application.version", String.class)
                    .orElse("unknown");
            return new String[] {"warden " + version, "Java " + Runtime.version()};
        }
    }
}
