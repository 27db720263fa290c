package dev.warden.cli;

import dev.warden.lock.NativePosix;
import dev.warden.lock.Posix;
import io.quarkus.runtime.Quarkus;
import io.quarkus.runtime.QuarkusApplication;
import io.quarkus.runtime.annotations.QuarkusMain;
import jakarta.inject.Inject;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import picocli.CommandLine;

/**
 * warden's entry point. Quarkus starts its HTTP servers before any command runs, so for every
 * command but {@code serve} the API server and the scheduler are switched off first, and the
 * management interface moved to a free loopback port: a one-shot {@code warden status} must not
 * collide with a running {@code warden serve} on its ports.
 */
@QuarkusMain
public class WardenMain implements QuarkusApplication {

    private static final List<String> HELP_FLAGS = List.of("-h", "--help", "-V", "--version");

    private final CommandLine.IFactory factory;
    private final Posix posix;

    @Inject
    public WardenMain(CommandLine.IFactory factory, Posix posix) {
        this.factory = factory;
        this.posix = posix;
    }

    public static void main(String... args) {
        // Linking the libc downcalls spins their classes (about 0.1 s of a start): done beside Quarkus's
        // own start, on the other core, rather than before it. Whoever needs them first waits for the link.
        // The same thread then makes the process undumpable, before Quarkus reads a Secret: from then on no
        // other process of warden's UID reads its environment, memory or mounts through /proc (ProcessBoundary).
        Thread.ofPlatform().daemon().name("warden-link").start(WardenMain::undumpable);
        if (!serves(args)) {
            System.setProperty("quarkus.http.host-enabled", "false");
            // The management interface cannot be switched off at run time: a loopback port of the kernel's
            // choosing, so a `warden status` beside a `warden serve` (in its pod, say) does not collide with it.
            System.setProperty("quarkus.management.host", "127.0.0.1");
            System.setProperty("quarkus.management.port", "0");
            System.setProperty("quarkus.scheduler.enabled", "false");
            // A one-shot command prints its answer on stdout; keep framework chatter off it.
            System.setProperty("quarkus.log.level", "WARN");
            System.setProperty("quarkus.log.console.stderr", "true");
        }
        Quarkus.run(WardenMain.class, args);
    }

    private static void undumpable() {
        try {
            NativePosix.shared().dumpable(false);
        } catch (Posix.ErrnoException e) {
            // serve's ProcessBoundary tries again and says so in the log, which is not up yet.
        }
    }

    /**
     * Clears the group-write bit of the umask, keeping the rest of it: the lock files and directories
     * warden creates on a shared volume must be writable by the other containers of the pod's fsGroup
     * (lilbee's, of another UID, opens lock files for writing), whichever command creates them. Done
     * before any command runs; nothing before that creates a file.
     */
    static void groupWritable(Posix posix) {
        int mask = posix.umask(0);
        posix.umask(mask & ~0020);
    }

    /** Whether these arguments run the long-lived server (and not just its help). */
    static boolean serves(String... args) {
        for (String arg : args) {
            if (HELP_FLAGS.contains(arg)) {
                return false;
            }
        }
        for (String arg : args) {
            if (!arg.startsWith("-")) {
                return "serve".equals(arg);
            }
        }
        return false;
    }

    @Override
    public int run(String... args) {
        groupWritable(posix);
        return commandLine(factory, args).execute(args);
    }

    /**
     * The command line as users meet it: one-line hints on usage errors, exit code 2. For {@code serve}, only that
     * command under {@code warden}: picocli reads the annotations of every command it is given, a cost paid
     * on the native executable's start, on the way to a pod's readiness, where {@code serve} needs its own alone. Its
     * help, and every other command, come from the whole model.
     */
    static CommandLine commandLine(CommandLine.IFactory factory, String... args) {
        CommandLine commandLine;
        if (serves(args)) {
            commandLine = new CommandLine(CommandLine.Model.CommandSpec.create().name("warden"), factory);
            commandLine.addSubcommand(new CommandLine(ServeCommand.class, factory));
        } else {
            commandLine = new CommandLine(WardenCommand.class, factory);
        }
        commandLine.setParameterExceptionHandler((e, arguments) -> {
            CommandLine failed = e.getCommandLine();
            failed.getErr().println("warden: " + e.getMessage());
            failed.getErr().println("Try '" + failed.getCommandSpec().qualifiedName() + " --help' for more information.");
            return ExitCodes.USAGE;
        });
        commandLine.setExecutionExceptionHandler((e, failed, parseResult) -> {
            failed.getErr().println("warden: " + describe(e));
            return ExitCodes.ERROR;
        });
        return commandLine;
    }

    /**
     * An exception and what caused it, on one line: warden's own messages name the path and the fix,
     * but a library's may say no more than "An error has occurred." and leave the reason in its cause.
     */
    static String describe(Throwable e) {
        StringBuilder line = new StringBuilder(String.valueOf(e.getMessage() != null ? e.getMessage() : e));
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        seen.add(e);
        for (Throwable cause = e.getCause(); cause != null && seen.add(cause); cause = cause.getCause()) {
            String said = cause.getMessage();
            if (said == null || !line.toString().contains(said)) {
                line.append(" (caused by ").append(cause.getClass().getSimpleName()).append(said != null ? ": " + said : "")
                        .append(')');
            }
        }
        return line.toString();
    }
}
