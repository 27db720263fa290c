package dev.warden.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.warden.config.LilbeePaths;
import dev.warden.config.WardenConfig;
import dev.warden.hold.LockInspector;
import dev.warden.hold.LockLook;
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
                    + " shows it, and the scope's owner), or absent. Creates nothing; a free lock is taken and"
                    + " let go at once.",
        },
        exitCodeListHeading = "%nExit codes:%n", exitCodeList = {"0:the look was taken (whatever it found)",
            "2:usage error"})
public class StatusCommand implements Callable<Integer> {

    @Mixin
    PathOptions paths;

    @Option(names = "--json", description = "Print JSON instead of text.")
    boolean json;

    @Spec
    CommandSpec spec;

    @Inject
    LockInspector inspector;

    @Inject
    WardenConfig config;

    @Inject
    ObjectMapper mapper;

    @Override
    public Integer call() throws Exception {
        LilbeePaths lilbee = paths.resolve(config).canonical();
        List<LockLook> looks = inspector.look(lilbee);
        PrintWriter out = spec.commandLine().getOut();
        if (json) {
            out.println(mapper.writerWithDefaultPrettyPrinter().writeValueAsString(toJson(lilbee, looks)));
        } else {
            out.printf("data root  %s%n", lilbee.dataRoot());
            out.printf("data dir   %s%n", lilbee.dataDir());
            out.printf("scope      %s%n", lilbee.scopeDir().map(Object::toString).orElse("(none)"));
            for (LockLook look : looks) {
                out.printf("%-10s %s: %s%n", look.kind().label(), look.path(), describe(look));
            }
        }
        out.flush();
        return ExitCodes.OK;
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

    private ObjectNode toJson(LilbeePaths lilbee, List<LockLook> looks) {
        ObjectNode root = mapper.createObjectNode();
        root.put("data_root", lilbee.dataRoot().toString());
        root.put("data_dir", lilbee.dataDir().toString());
        lilbee.scopeDir().ifPresentOrElse(s -> root.put("scope_dir", s.toString()), () -> root.putNull("scope_dir"));
        ArrayNode locks = root.putArray("locks");
        for (LockLook look : looks) {
            ObjectNode lock = locks.addObject();
            lock.put("name", look.kind().label());
            lock.put("path", look.path().toString());
            lock.put("state", look.state());
            look.holderPid().ifPresent(pid -> lock.put("holder_pid", pid));
            look.error().ifPresent(error -> lock.put("error", error));
            look.owner().ifPresent(owner -> {
                ObjectNode node = lock.putObject("owner");
                owner.dataDir().ifPresentOrElse(d -> node.put("data_dir", d), () -> node.putNull("data_dir"));
                owner.pid().ifPresent(pid -> node.put("pid", pid));
            });
        }
        return root;
    }
}
