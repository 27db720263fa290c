package dev.warden.testing;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.warden.engine.EngineClient;
import dev.warden.engine.EngineDir;
import dev.warden.engine.EngineIdentity;
import dev.warden.engine.EngineRecords;
import dev.warden.engine.EngineStopper;
import dev.warden.engine.EngineUsers;
import dev.warden.engine.ProcessTable;
import dev.warden.engine.Signaller;
import dev.warden.lock.FileLocker;
import dev.warden.lock.NativePosix;
import dev.warden.reaper.Reaper;
import java.net.URI;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Optional;

/** A {@link Reaper} wired as warden wires one, to the real libc, /proc and loopback, for tests and benchmarks. */
public final class SystemReaper {

    public static final Duration KILL_TIMEOUT = Duration.ofSeconds(5);

    private SystemReaper() {
    }

    /** warden's default engine client timeouts: connect 500 ms, read 2 s, unload 30 s. */
    public static EngineClient client() {
        return new EngineClient(new ObjectMapper(), Duration.ofMillis(500), Duration.ofSeconds(2), Duration.ofSeconds(30),
                Optional.empty());
    }

    /** With a SIGTERM grace of {@code term}; the rest as warden's defaults, on the system clock. */
    public static Reaper of(EngineDir dir, Duration term) {
        FileLocker locker = new FileLocker(new NativePosix());
        return of(dir, new EngineUsers(locker), client(), term, InstantSource.system(), Duration.ofMinutes(5), Optional.empty());
    }

    public static Reaper of(EngineDir dir, EngineUsers users, EngineClient client, Duration term, InstantSource clock,
            Duration idleTtl, Optional<URI> external) {
        return of(dir, users, client, term, clock, idleTtl, external, java.util.List.of());
    }

    /** With {@code others}, the data root's other engine dirs, as warden's reaper has them. */
    public static Reaper of(EngineDir dir, EngineUsers users, EngineClient client, Duration term, InstantSource clock,
            Duration idleTtl, Optional<URI> external, java.util.List<EngineDir> others) {
        return new Reaper(dir, users, new FileLocker(new NativePosix()), new EngineRecords(new ObjectMapper()), stopper(term),
                new EngineIdentity(new ProcessTable()), client, clock, idleTtl, external, others);
    }

    /** warden's engine stopper with a SIGTERM grace of {@code term}. */
    public static EngineStopper stopper(Duration term) {
        NativePosix posix = new NativePosix();
        ProcessTable processes = new ProcessTable();
        return new EngineStopper(new EngineIdentity(processes), processes, new Signaller(posix, processes), term, KILL_TIMEOUT);
    }
}
