package dev.warden.cli;

import dev.warden.config.WardenConfig;
import dev.warden.engine.EngineActions;
import dev.warden.engine.EngineClient;
import dev.warden.engine.EngineDirs;
import dev.warden.lock.LockException;
import jakarta.inject.Inject;
import java.io.PrintWriter;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

@Command(name = "engine", mixinStandardHelpOptions = true,
        description = "Act on the engine now, under the build lock (waiting up to warden.engine.build-lock-wait,"
                + " 90 s, for a build in flight).",
        subcommands = {EngineCommand.Stop.class, EngineCommand.Unload.class})
public class EngineCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        throw new CommandLine.ParameterException(spec.commandLine(), "Missing action: stop or unload.");
    }

    @Command(name = "stop", mixinStandardHelpOptions = true,
            description = "Stop every recorded llama-swap (SIGTERM to its group, SIGKILL if it lingers, then its"
                    + " leftover llama-servers) and delete the records and keep-warm markers, even while users hold it.",
            exitCodeListHeading = "%nExit codes:%n", exitCodeList = {"0:stopped (or nothing recorded)", "1:an error",
                "2:usage error", "3:the build lock stayed held"})
    static class Stop extends Action {
        @Override
        int act(EngineDirs dirs, PrintWriter out) throws EngineActions.BuildLockBusy, LockException {
            actions.stop(dirs).forEach(out::println);
            return ExitCodes.OK;
        }
    }

    @Command(name = "unload", mixinStandardHelpOptions = true,
            description = "Unload the weights of every recorded engine (and warden.engine.url); the proxies stay up"
                    + " and load a model again on the next request.",
            exitCodeListHeading = "%nExit codes:%n", exitCodeList = {"0:every engine unloaded (or none to unload)",
                "1:an engine refused or did not answer", "2:usage error", "3:the build lock stayed held"})
    static class Unload extends Action {
        @Override
        int act(EngineDirs dirs, PrintWriter out) throws EngineActions.BuildLockBusy, LockException {
            List<EngineClient.UnloadResult> results = actions.unload(dirs);
            if (results.isEmpty()) {
                out.println("no engine to unload");
            }
            results.forEach(r -> out.println(r.detail()));
            return results.stream().allMatch(EngineClient.UnloadResult::unloaded) ? ExitCodes.OK : ExitCodes.ERROR;
        }
    }

    /** What stop and unload share: the engine dir option, and exit 3 when the build lock stays held. */
    abstract static class Action implements Callable<Integer> {
        @Mixin
        RootOptions root;
        @Mixin
        EngineDirOption engine;
        @Spec
        CommandSpec spec;
        @Inject
        EngineActions actions;
        @Inject
        WardenConfig config;

        abstract int act(EngineDirs dirs, PrintWriter out) throws EngineActions.BuildLockBusy, LockException;

        @Override
        public Integer call() throws LockException {
            try {
                return act(engine.resolve(config, root.resolve(config, java.util.Optional.empty())), spec.commandLine().getOut());
            } catch (EngineActions.BuildLockBusy e) {
                spec.commandLine().getErr().println("warden: " + e.getMessage());
                return ExitCodes.LOCK_REFUSED;
            }
        }
    }
}
