package dev.warden.cli;

import dev.warden.config.LilbeePaths;
import dev.warden.config.WardenConfig;
import dev.warden.engine.EngineUsers;
import dev.warden.hold.ScopeOwner;
import dev.warden.hold.ScopeOwnerFile;
import dev.warden.library.LibraryLocks;
import dev.warden.library.LibraryUnlockableException;
import dev.warden.library.LockTimeoutException;
import dev.warden.library.ResetRefusedException;
import dev.warden.lock.FileLocker;
import dev.warden.lock.HeldLock;
import dev.warden.lock.ProcLocks;
import jakarta.inject.Inject;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import sun.misc.Signal;

@Command(name = "exec", mixinStandardHelpOptions = true, sortOptions = false,
        description = {
            "Run a command while holding lilbee's locks, like flock(1) but speaking lilbee: for a backup or a"
                    + " maintenance script in the pod (`warden exec --hold backup -- tar ...`).",
            "",
            "LOCK is one of: data-dir (server.lock), scope (server.scope.lock, with its owner file), write"
                    + " (LanceDB's .lock), sync (the sync mark's shared read side, as a sync or import takes it),"
                    + " reset (its write side, refused while any sync runs), engine-user (a user of the engine, so"
                    + " the reaper leaves it running). They are taken in that order, whatever order you name them in,"
                    + " and released in reverse when the command ends.",
            "",
            "backup is sync and write together: what a copy of the library needs. `lilbee reset` takes only the"
                    + " sync mark and then empties <data root>/data, LanceDB and its .lock included, so write alone does"
                    + " not keep a backup's files from vanishing under it; the sync side makes every reset refuse"
                    + " while the command runs, and the write lock keeps writers out of the tables.",
            "",
            "The command gets warden's stdin, stdout and stderr; SIGTERM and SIGINT are passed on to it; warden"
                    + " exits with its exit code. If warden itself is killed, the kernel frees its locks.",
        },
        exitCodeListHeading = "%nExit codes:%n", exitCodeList = {
            "n:the command's own exit code (128+N when it died of signal N)",
            "1:an error taking a lock or starting the command; the message says which",
            "2:usage error",
            "3:a lock was not had in time (--wait), or a reset was refused; the message names the holder",
        })
public class ExecCommand implements Callable<Integer> {

    /** The locks exec can hold, in the order it takes them. */
    enum Hold {
        SCOPE("scope"), DATA_DIR("data-dir"), SYNC("sync"), RESET("reset"), WRITE("write"), ENGINE_USER("engine-user"),
        /** sync and write: a reset refuses and no writer changes the tables while a copy is taken. */
        BACKUP("backup");

        final String label;

        Hold(String label) {
            this.label = label;
        }

        static Hold of(String label) {
            for (Hold hold : values()) {
                if (hold.label.equals(label)) {
                    return hold;
                }
            }
            throw new IllegalArgumentException("unknown lock '" + label + "': use data-dir, scope, write, sync, reset, backup or engine-user");
        }
    }

    /** filelock's own poll interval while a lock with a deadline waits. */
    private static final Duration POLL = Duration.ofMillis(50);
    private static final int SIGINT = 2;
    private static final int SIGTERM = 15;

    @Option(names = "--hold", required = true, split = ",", paramLabel = "LOCK", converter = HoldConverter.class,
            description = "The locks to hold, comma-separated or repeated.")
    List<Hold> holds;

    @Option(names = "--wait", paramLabel = "DURATION", defaultValue = "30s", converter = DurationConverter.class,
            description = "How long to wait for all the locks together (default ${DEFAULT-VALUE}; 0 = not at all)."
                    + " A reset never waits.")
    Duration wait;

    @Mixin
    PathOptions paths;

    @Mixin
    EngineDirOption engine;

    @Parameters(arity = "1..*", paramLabel = "COMMAND", description = "The command and its arguments, after --.")
    List<String> command;

    @Spec
    CommandSpec spec;

    @Inject
    WardenConfig config;

    @Inject
    FileLocker locker;

    @Inject
    ProcLocks procLocks;

    @Inject
    ScopeOwnerFile ownerFile;

    @Inject
    LibraryLocks library;

    @Inject
    EngineUsers users;

    @Inject
    dev.warden.lock.Posix posix;

    @Override
    public Integer call() throws Exception {
        Set<Hold> wanted = EnumSet.copyOf(holds);
        if (wanted.remove(Hold.BACKUP)) {
            wanted.addAll(List.of(Hold.SYNC, Hold.WRITE));
        }
        if (wanted.contains(Hold.SYNC) && wanted.contains(Hold.RESET)) {
            throw new CommandLine.ParameterException(spec.commandLine(),
                    "sync (or backup) and reset exclude each other: a reset is refused while a sync (even this one) runs.");
        }
        if (wanted.contains(Hold.SCOPE) && paths.resolve(config).scopeDir().isEmpty()) {
            throw new CommandLine.ParameterException(spec.commandLine(),
                    "--hold scope needs a scope: --scope DIR, warden.scope-dir or $LILBEE_EXCLUSIVE_SCOPE.");
        }
        LilbeePaths lilbee = paths.resolve(config).created();
        long deadline = System.nanoTime() + wait.toNanos();
        Deque<AutoCloseable> held = new ArrayDeque<>();
        try {
            for (Hold hold : wanted) {
                Optional<String> refusal = take(hold, lilbee, deadline, held);
                if (refusal.isPresent()) {
                    spec.commandLine().getErr().println("warden: " + refusal.get());
                    return ExitCodes.LOCK_REFUSED;
                }
            }
            return run();
        } finally {
            while (!held.isEmpty()) {
                held.pop().close();
            }
        }
    }

    /** Takes one lock, pushing what releases it; a refusal message when it is not had in time. */
    private Optional<String> take(Hold hold, LilbeePaths lilbee, long deadline, Deque<AutoCloseable> held) throws Exception {
        Duration left = Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
        switch (hold) {
            case SCOPE -> {
                Path lock = lilbee.scopeLock().orElseThrow();
                Optional<HeldLock> scope = locker.tryLock(lock, left, POLL);
                if (scope.isEmpty()) {
                    ScopeOwner owner = ownerFile.read(lilbee.scopeOwner().orElseThrow());
                    return Optional.of("The scope " + lilbee.scopeDir().orElseThrow() + " is held by "
                            + (owner.known() ? owner.describe() : holder(lock)) + "; gave up after " + wait.toMillis() + " ms.");
                }
                held.push(scope.get());
                Path ownerPath = lilbee.scopeOwner().orElseThrow();
                ownerFile.write(ownerPath, lilbee.dataDir(), ProcessHandle.current().pid());
                held.push(() -> ownerFile.remove(ownerPath));
            }
            case DATA_DIR -> {
                Optional<HeldLock> dataDir = locker.tryLock(lilbee.serverLock(), left, POLL);
                if (dataDir.isEmpty()) {
                    return Optional.of(lilbee.serverLock() + " is held by " + holder(lilbee.serverLock())
                            + "; gave up after " + wait.toMillis() + " ms.");
                }
                held.push(dataDir.get());
            }
            case SYNC -> {
                try {
                    held.push(library.syncRunning(lilbee.dataRoot(), left));
                } catch (LockTimeoutException | LibraryUnlockableException e) {
                    return Optional.of(e.getMessage());
                }
            }
            case RESET -> {
                try {
                    held.push(library.noSyncRunning(lilbee.dataRoot()));
                } catch (ResetRefusedException e) {
                    return Optional.of(e.getMessage());
                }
            }
            case WRITE -> {
                try {
                    held.push(library.writeLock(lilbee.lancedbDir(), left));
                } catch (LockTimeoutException e) {
                    return Optional.of(e.getMessage() + " (" + holder(lilbee.lancedbDir()
                            .resolve(LibraryLocks.WRITE_LOCK)) + ")");
                }
            }
            case BACKUP -> throw new IllegalStateException("backup is taken as sync and write");
            case ENGINE_USER -> held.push(users.join(engine.resolve(config, lilbee).slot(), "warden-exec-" + ProcessHandle.current().pid()));
        }
        return Optional.empty();
    }

    private String holder(Path lock) {
        return procLocks.describeHolder(lock);
    }

    private int run() throws IOException, InterruptedException {
        // Handlers first: a stop request that comes while the command starts must reach it too,
        // not end warden (and free the locks) under a running command.
        java.util.concurrent.atomic.AtomicReference<Process> child = new java.util.concurrent.atomic.AtomicReference<>();
        java.util.concurrent.atomic.AtomicInteger pending = new java.util.concurrent.atomic.AtomicInteger();
        Signal.handle(new Signal("TERM"), s -> forward(child.get(), SIGTERM, pending));
        Signal.handle(new Signal("INT"), s -> forward(child.get(), SIGINT, pending));
        Process started;
        try {
            started = new ProcessBuilder(command).inheritIO().start();
        } catch (IOException e) {
            spec.commandLine().getErr().println("warden: cannot run " + command.getFirst() + ": " + e.getMessage());
            return ExitCodes.ERROR;
        }
        child.set(started);
        int early = pending.getAndSet(0);
        if (early != 0) {
            forward(started, early, pending);
        }
        return started.waitFor();
    }

    /** Passes a signal on to the command, or keeps it for the command about to start. */
    private void forward(Process child, int signal, java.util.concurrent.atomic.AtomicInteger pending) {
        if (child == null) {
            pending.set(signal);
            return;
        }
        try {
            posix.kill(child.pid(), signal);
        } catch (dev.warden.lock.Posix.ErrnoException e) {
            child.destroy();
        }
    }

    static final class HoldConverter implements CommandLine.ITypeConverter<Hold> {
        @Override
        public Hold convert(String value) {
            try {
                return Hold.of(value.trim());
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException(e.getMessage());
            }
        }
    }

    static final class DurationConverter implements CommandLine.ITypeConverter<Duration> {
        @Override
        public Duration convert(String value) {
            try {
                return io.quarkus.runtime.configuration.DurationConverter.parseDuration(value.trim());
            } catch (RuntimeException e) {
                throw new CommandLine.TypeConversionException("'" + value + "' is not a duration: write 30s, 500ms or 2m");
            }
        }
    }
}
