package dev.warden.cli;

import dev.warden.boundary.ConnectionGuards;
import dev.warden.boundary.ProcessBoundary;
import dev.warden.config.ContainerVolume;
import dev.warden.config.LilbeeEnvironment;
import dev.warden.config.LilbeePaths;
import dev.warden.config.Mode;
import dev.warden.config.WardenConfig;
import dev.warden.control.ControlSocket;
import dev.warden.events.PodEvent;
import dev.warden.events.PodEvents;
import dev.warden.footprint.OneOffPages;
import dev.warden.gate.pod.GateKeeper;
import dev.warden.gate.GateTimings;
import dev.warden.gate.lease.LeaseElection;
import dev.warden.hold.LockKeeper;
import dev.warden.hold.Refusal;
import dev.warden.lock.FileLocker;
import dev.warden.lock.LockException;
import dev.warden.lock.Mount;
import dev.warden.lock.Posix;
import dev.warden.reaper.ReaperService;
import io.quarkus.runtime.Quarkus;
import jakarta.inject.Inject;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.Callable;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import sun.misc.Signal;

@Command(name = "serve", mixinStandardHelpOptions = true,
        description = {
            "Hold lilbee's locks and serve the health probes until SIGTERM or SIGINT.",
            "",
            "Takes <scope>/server.scope.lock (with --scope or warden.scope-dir) and then"
                    + " <data dir>/server.lock. While another process holds one, warden stands by:"
                    + " readiness says DOWN, and warden takes the lock the instant the holder lets go or dies.",
            "",
            "It also watches the engine dir (--engine-dir) and applies the last-user-out rule every"
                    + " second: with no live user it stops the recorded llama-swap fleet, or unloads a"
                    + " kept-warm engine's weights after warden.reaper.idle-ttl.",
            "",
            "Probes: /q/health/ready (holds every lock; the engine answers), /q/health/live (warden works),"
                    + " /q/health/started (has held every lock once), and /q/metrics, on the management port"
                    + " quarkus.management.port (9096). The API (/api/v1: status, engine stop and unload) is on"
                    + " quarkus.http.port (9095).",
            "",
            "--mode gate: for a pod whose main container is the real `lilbee serve`, run by lilbee's supervisor"
                    + " (helm/warden/files/lilbee-supervisor.py). warden never takes server.lock; it elects one pod"
                    + " through <data dir>/warden-gate.lock (and a Lease, with warden.gate.election=lease) and tells"
                    + " that pod's supervisor over warden.gate.supervisor.socket when lilbee may run: the supervisor"
                    + " stops lilbee the moment warden stops saying so. /q/health/ready says UP while this pod's lilbee"
                    + " holds server.lock. The pod needs shareProcessNamespace: true."
        },
        exitCodeListHeading = "%nExit codes:%n", exitCodeList = {
            "0:stopped by SIGTERM or SIGINT; every lock released",
            "1:a lock cannot be taken at all (--no-wait); the message names the path and the fix",
            "2:usage error, or the data root's filesystem cannot lock files (lilbee's own words: move it to a local disk)",
            "3:--no-wait and another process holds a lock",
        })
public class ServeCommand implements Callable<Integer> {

    private static final Logger LOG = Logger.getLogger(ServeCommand.class);

    @Mixin
    PathOptions paths;

    @Mixin
    EngineDirOption engine;

    @Option(names = "--no-wait", description = "Exit with code 3, naming the holder, when another process holds a"
            + " lock, instead of standing by (as `lilbee serve` refuses). Hold mode only.")
    boolean noWait;

    @Option(names = "--mode", paramLabel = "hold|gate", description = "hold: warden holds lilbee's server locks itself"
            + " (for an engine pod). gate: warden elects one pod and lets that pod's `lilbee serve` start."
            + " Default: warden.mode, else hold.", converter = ModeConverter.class)
    Mode mode;

    @Spec
    CommandSpec spec;

    @Inject
    LockKeeper keeper;

    @Inject
    GateKeeper gate;

    @Inject
    Posix posix;

    @Inject
    PodEvents events;

    @Inject
    dev.warden.routing.RoleRouting roleRouting;

    @Inject
    WardenConfig config;

    @Inject
    ReaperService reaper;

    @Inject
    ConnectionGuards connections;

    @Inject
    ProcessBoundary boundary;

    @Inject
    OneOffPages oneOffPages;

    @Inject
    FileLocker locker;

    @ConfigProperty(name = "quarkus.http.port")
    int port;

    @ConfigProperty(name = "quarkus.management.port")
    int managementPort;

    /**
     * A stop request is the normal end of a sidecar: shut down (the lock keeper releases every
     * lock on the way) and exit 0, where the JVM's default would exit 128 + signal.
     */
    private void exitCleanlyOn(String signal) {
        Signal.handle(new Signal(signal), s -> {
            // A reaper pass may be running on this command's own thread (the first one is): end it
            // first, or the exit would wait for it, a stop's grace period and all.
            reaper.stop();
            Quarkus.asyncExit(ExitCodes.OK);
        });
    }

    /** Where warden step-down reaches this warden, in gate mode. */
    private ControlSocket control;

    @Override
    public Integer call() {
        Duration interval = config.reaper().interval();
        if (config.reaper().enabled() && interval.compareTo(Duration.ofSeconds(1)) < 0) {
            // Quarkus's scheduler looks at its triggers once a second; a shorter interval would silently be 1 s.
            spec.commandLine().getErr().println("warden: warden.reaper.interval is " + interval.toMillis()
                    + " ms, but reaper passes run at most once a second; set it to 1s or more (a user's exit"
                    + " is noticed at once anyway: warden waits on each live user's lock)");
            return ExitCodes.USAGE;
        }
        Mode chosen = mode != null ? mode : config.mode();
        if (chosen == Mode.GATE && noWait) {
            spec.commandLine().getErr().println("warden: --no-wait is for hold mode: in gate mode warden never takes"
                    + " lilbee's locks, and a warden that is not elected stands by so that it can take over");
            return ExitCodes.USAGE;
        }
        // Before any lock is taken or the first reaper pass runs: a stop request in that window must not
        // end the JVM with the default 143 while it holds locks or is stopping an engine.
        exitCleanlyOn("TERM");
        exitCleanlyOn("INT");
        try {
            connections.install();
        } catch (IllegalArgumentException e) {
            spec.commandLine().getErr().println("warden: " + e.getMessage());
            return ExitCodes.USAGE;
        }
        boundary.guard();
        LilbeePaths lilbee = paths.resolve(config);
        LOG.infof("Data root %s (from %s)", lilbee.dataRoot(), lilbee.rootOrigin());
        if (ContainerVolume.inContainer(System.getenv())) {
            ContainerVolume.warning(lilbee.dataRoot(), Path.of("/")).ifPresent(LOG::warn);
        }
        LilbeeEnvironment.current().ignoredVariables(lilbee, config.dataDir().isPresent(), config.lancedbDir().isPresent())
                .forEach(LOG::warn);
        Optional<String> noLocking = noLocking(chosen, lilbee);
        if (noLocking.isPresent()) {
            spec.commandLine().getErr().println("warden: " + noLocking.get());
            return ExitCodes.USAGE;
        }
        if (!config.lock().heartbeat().isPositive() || config.lock().heartbeat().compareTo(config.lock().pollInterval()) < 0) {
            spec.commandLine().getErr().println("warden: warden.lock.heartbeat (" + config.lock().heartbeat().toMillis()
                    + " ms) must be at least warden.lock.poll-interval (" + config.lock().pollInterval().toMillis()
                    + " ms): a holder beats at most once a round, and a pod on another mount waits 4 beats before it takes"
                    + " a silent holder for gone. Set warden.lock.heartbeat to 250ms, the default");
            return ExitCodes.USAGE;
        }
        Path locked = chosen == Mode.GATE ? lilbee.gateLock() : lilbee.serverLock();
        Mount.holding(locked).flatMap(Mount::localLocks).ifPresent(local -> LOG.warnf("The lock %s: %s", locked, local));
        if (config.events().enabled()) {
            try {
                events.start(config.gate().role().pod(), config.gate().role().namespace(), System.getenv());
            } catch (IllegalArgumentException | IllegalStateException e) {
                spec.commandLine().getErr().println("warden: " + e.getMessage());
                return ExitCodes.USAGE;
            }
        }
        keeper.onReachChange(verdict -> PodEvent.ofReach(verdict).ifPresent(events::record));
        if (chosen == Mode.GATE) {
            lilbee.scopeDir().ifPresent(scope -> LOG.warnf("In gate mode warden watches %s only: the scope lock in %s is"
                    + " lilbee's own, and a pod whose lilbee it refuses exits 3", lilbee.serverLock(), scope));
            if (!GateKeeper.seesPodProcesses()) {
                LOG.warn("In gate mode warden must see its pod's lilbee, but it is PID 1 of a PID namespace of its own,"
                        + " where no other container's process is visible: it will never report ready. Set"
                        + " shareProcessNamespace: true on the pod (the chart does)");
            }
            List<String> unsafe = GateTimings.of(config.gate()).problems(config.gate().pauseMargin());
            if (!unsafe.isEmpty()) {
                unsafe.forEach(problem -> spec.commandLine().getErr().println("warden: " + problem));
                return ExitCodes.USAGE;
            }
            gate.onEvent(events::record);
            if (config.gate().routing() == WardenConfig.Gate.Routing.ROLE) {
                try {
                    roleRouting.start(config.gate().role(), System.getenv());
                } catch (IllegalArgumentException | IllegalStateException e) {
                    spec.commandLine().getErr().println("warden: " + e.getMessage());
                    return ExitCodes.USAGE;
                }
            }
            try {
                if (config.gate().election() == WardenConfig.Gate.Election.LEASE) {
                    LeaseElection election = new LeaseElection(LeaseElection.Settings.of(config.gate().lease(), System.getenv()));
                    gate.start(lilbee, election);
                    election.start(Optional.ofNullable(System.getenv("NODE_NAME")).filter(n -> !n.isBlank()));
                } else {
                    gate.start(lilbee);
                }
            } catch (IOException e) {
                spec.commandLine().getErr().println("warden: " + e.getMessage());
                return ExitCodes.ERROR;
            }
            LOG.infof("warden gates lilbee serve for data dir %s through %s; probes and metrics on port %d, the API on"
                    + " port %d", lilbee.dataDir(), lilbee.gateLock(), managementPort, port);
            control = controlSocket();
        } else {
            OptionalInt refused = hold(lilbee);
            if (refused.isPresent()) {
                return refused.getAsInt();
            }
        }
        if (config.reaper().enabled()) {
            reaper.start(engine.resolve(config, lilbee));
        }
        oneOffPages.releaseLater("the start");
        Quarkus.waitForExit();
        if (control != null) {
            control.close();
        }
        return ExitCodes.OK;
    }

    /** The socket warden step-down asks through; without it (a warning says why) the gate runs on, and the API asks. */
    private ControlSocket controlSocket() {
        try {
            return ControlSocket.open(config.gate().controlSocket(), gate, posix);
        } catch (IOException | RuntimeException e) {
            LOG.warnf("warden step-down cannot reach this warden: %s", e.getMessage());
            return null;
        }
    }

    /**
     * Why the volume refuses this start, as lilbee serve refuses it: a lock file this mode takes (in gate mode warden's
     * own gate lock, never lilbee's) is on a filesystem that cannot lock at all, which no retry mends.
     */
    private Optional<String> noLocking(Mode chosen, LilbeePaths lilbee) {
        List<Path> locks = new ArrayList<>();
        if (chosen == Mode.GATE) {
            locks.add(lilbee.gateLock());
        } else {
            lilbee.scopeLock().ifPresent(locks::add);
            locks.add(lilbee.serverLock());
        }
        try {
            for (Path lock : locks) {
                locker.requireLocking(lock);
            }
            return Optional.empty();
        } catch (LockException e) {
            return Optional.of(e.getMessage());
        }
    }

    /** Hold mode: takes (or stands by for) lilbee's server locks; the exit code when serve must end instead. */
    private OptionalInt hold(LilbeePaths lilbee) {
        Optional<Refusal> refusal;
        try {
            refusal = keeper.start(lilbee, !noWait);
        } catch (LockException e) {
            spec.commandLine().getErr().println("warden: " + e.getMessage());
            return OptionalInt.of(ExitCodes.ERROR);
        }
        if (refusal.isPresent()) {
            spec.commandLine().getErr().println("warden: " + refusal.get().message());
            return OptionalInt.of(Refusal.EXIT_CODE);
        }
        LOG.infof("warden serves data dir %s%s; probes and metrics on port %d, the API on port %d", lilbee.dataDir(),
                lilbee.scopeDir().map(s -> " in scope " + s).orElse(""), managementPort, port);
        return OptionalInt.empty();
    }

    /** {@code hold} or {@code gate}, in any case; anything else is a usage error naming both. */
    static final class ModeConverter implements CommandLine.ITypeConverter<Mode> {
        @Override
        public Mode convert(String value) {
            for (Mode mode : Mode.values()) {
                if (mode.label().equalsIgnoreCase(value.strip())) {
                    return mode;
                }
            }
            throw new CommandLine.TypeConversionException("'" + value + "' is not a mode: use hold or gate");
        }
    }
}
