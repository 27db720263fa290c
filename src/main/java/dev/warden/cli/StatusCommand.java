package dev.warden.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.warden.api.StatusJson;
import dev.warden.config.LilbeePaths;
import dev.warden.config.WardenConfig;
import dev.warden.engine.EngineInspector;
import dev.warden.engine.EngineLook;
import dev.warden.hold.LockInspector;
import dev.warden.hold.LockLook;
import dev.warden.library.LibraryLocks;
import dev.warden.library.LibraryLook;
import jakarta.inject.Inject;
import java.io.PrintWriter;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(name = "status", mixinStandardHelpOptions = true,
        description = {
            "Look once at every lock: free, held (with the holder's pid where the kernel's lock table"
                    + " shows it, and the scope's owner), or absent; and at the engine dir: live users,"
                    + " keep-warm markers, each recorded llama-swap (is the pid still ours, does it answer),"
                    + " and who holds the reaper lock; and at the library: is a sync or a reset running, is"
                    + " the LanceDB write lock held.",
            "Creates and deletes nothing; a free lock is taken and let go at once. The reaper's own"
                    + " state (idle since, last action) lives in the serving warden: GET /api/v1/status.",
        },
        exitCodeListHeading = "%nExit codes:%n", exitCodeList = {"0:the look was taken (whatever it found)",
            "2:usage error"})
public class StatusCommand implements Callable<Integer> {

    @Mixin
    PathOptions paths;

    @Mixin
    EngineDirOption engine;

    @Option(names = "--json", description = "Print JSON instead of text.")
    boolean json;

    @Spec
    CommandSpec spec;

    @Inject
    LockInspector inspector;

    @Inject
    EngineInspector engines;

    @Inject
    WardenConfig config;

    @Inject
    StatusJson statusJson;

    @Inject
    LibraryLocks library;

    @Inject
    ObjectMapper mapper;

    @Override
    public Integer call() throws Exception {
        LilbeePaths lilbee = paths.resolve(config).canonical();
        List<LockLook> looks = inspector.look(lilbee);
        List<EngineLook> engineLooks = engines.look(engine.resolve(config, lilbee), config.reaper().lockName());
        LibraryLook libraryLook = library.look(lilbee.dataRoot(), lilbee.lancedbDir());
        PrintWriter out = spec.commandLine().getOut();
        if (json) {
            out.println(mapper.writerWithDefaultPrettyPrinter().writeValueAsString(
                    statusJson.document(lilbee, config.mode(), looks, libraryLook, engineLooks, java.util.Optional.empty(),
                            java.util.Optional.empty())));
        } else {
            out.printf("mode       %s%n", config.mode().label());
            out.printf("data root  %s (from %s)%n", lilbee.dataRoot(), lilbee.rootOrigin());
            out.printf("data dir   %s%n", lilbee.dataDir());
            out.printf("scope      %s%n", lilbee.scopeDir().map(Object::toString).orElse("(none)"));
            for (LockLook look : looks) {
                out.printf("%-10s %s: %s%n", look.kind().label(), look.path(), describe(look));
            }
            out.printf("sync       %s%n", libraryLook.error().map(e -> "unknown: " + e)
                    .orElse(libraryLook.syncRunning() ? "a sync or import is running" : "none running"));
            out.printf("reset      %s%n", libraryLook.resetRunning() ? "a reset is running" : "none running");
            out.printf("write lock %s%n", libraryLook.writeLock());
            for (EngineLook engineLook : engineLooks) {
                printEngine(out, engineLook);
            }
        }
        out.flush();
        return ExitCodes.OK;
    }

    private static void printEngine(PrintWriter out, EngineLook look) {
        out.printf("engine dir %s (%s)%s%n", look.dir(), look.role(), look.exists() ? "" : ": not created yet");
        if (!look.exists()) {
            return;
        }
        out.printf("  users      %s%n", look.liveUsers().isEmpty() ? "none live" : String.join(", ", look.liveUsers()));
        out.printf("  keep-warm  %s%n", look.keepWarmMarkers().isEmpty() ? "no" : String.join(", ", look.keepWarmMarkers()));
        out.printf("  reaper     %s%n", look.reaperLock());
        if (look.records().isEmpty()) {
            out.printf("  engines    none recorded%n");
        }
        for (EngineLook.RecordLook r : look.records()) {
            out.printf("  engine     %s: pid %d%s, ours: %s, answers: %s%n", r.file(), r.pid(),
                    r.proxyPort().map(p -> ", port " + p).orElse(""), r.ours(), r.answers() ? "yes" : "no");
        }
        for (var bad : look.unreadable()) {
            out.printf("  unreadable %s: %s (left in place)%n", bad.file().getFileName(), bad.reason());
        }
    }

    private static String describe(LockLook look) {
        return switch (look.state()) {
            case "held" -> "held by " + look.holderPid().stream().mapToObj(p -> "pid " + p).findFirst()
                    .orElse("another process") + look.owner().filter(o -> o.known())
                    .map(o -> ", serving " + o.dataDir().orElseThrow()).orElse("");
            case "absent" -> "free (no lock file yet)";
            case "error" -> "error: " + look.error().orElse("");
            default -> look.state();
        };
    }
}
