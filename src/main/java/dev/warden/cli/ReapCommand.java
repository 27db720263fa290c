package dev.warden.cli;

import dev.warden.config.WardenConfig;
import dev.warden.engine.EngineDirs;
import dev.warden.reaper.PassOutcome;
import dev.warden.reaper.Reaper;
import dev.warden.reaper.ReaperService;
import jakarta.inject.Inject;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(name = "reap", mixinStandardHelpOptions = true,
        description = {
            "Run one pass of the last-user-out rule on each engine dir now (with --dry-run, only say what it would do).",
            "",
            "With no live user, under the build lock, it stops every recorded llama-swap, or unloads a"
                    + " kept-warm engine's weights once it has idled for warden.reaper.idle-ttl.",
            "A one-shot pass has no idle history: a kept-warm engine's idle time starts with it, so"
                    + " only `serve` (which runs the rule every second) ever unloads.",
        },
        exitCodeListHeading = "%nExit codes:%n", exitCodeList = {"0:the pass ran (whatever it decided)",
            "1:an error", "2:usage error"})
public class ReapCommand implements Callable<Integer> {

    @Mixin
    RootOptions root;

    @Mixin
    EngineDirOption engine;

    @Option(names = "--once", description = "Run one pass and exit (serve runs the reaper continuously).")
    boolean once;

    @Option(names = "--dry-run", description = "Say what the pass would do; take no lock, delete nothing, signal nothing.")
    boolean dryRun;

    @Spec
    CommandSpec spec;

    @Inject
    ReaperService reapers;

    @Inject
    WardenConfig config;

    @Override
    public Integer call() {
        if (!once) {
            throw new CommandLine.ParameterException(spec.commandLine(),
                    "reap runs one pass: add --once (warden serve runs the reaper continuously).");
        }
        EngineDirs dirs = engine.resolve(config, root.resolve(config, java.util.Optional.empty()));
        for (EngineDirs.Entry entry : dirs.inUse()) {
            Reaper reaper = reapers.reaperFor(entry, dirs);
            PassOutcome outcome = dryRun ? reaper.dryRun() : reaper.pass();
            spec.commandLine().getOut().printf("%s%s (%s engine dir %s): %s%n", dryRun ? "dry run: " : "",
                    outcome.action().name().toLowerCase().replace('_', '-'), entry.role(), entry.dir().root(), outcome.detail());
        }
        return ExitCodes.OK;
    }
}
