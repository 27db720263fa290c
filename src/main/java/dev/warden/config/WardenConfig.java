package dev.warden.config;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

/**
 * Everything warden can be told. Each property is also an environment variable: {@code
 * warden.data-root} is {@code WARDEN_DATA_ROOT}. The defaults resolve paths exactly as lilbee
 * does, so warden guards the same files lilbee uses without being told.
 */
@ConfigMapping(prefix = "warden")
public interface WardenConfig {

    /**
     * lilbee's data root: {@code $LILBEE_DATA}, else {@code $XDG_DATA_HOME/lilbee}, else
     * {@code ~/.local/share/lilbee}. {@code serve --data-root} overrides it.
     */
    @WithDefault("${LILBEE_DATA:${XDG_DATA_HOME:${HOME:${user.home}}/.local/share}/lilbee}")
    Path dataRoot();

    /**
     * The data dir whose {@code server.lock} warden holds: {@code $LILBEE_DATA_DIR}, else
     * {@code <data-root>/data}.
     */
    @WithDefault("${LILBEE_DATA_DIR:}")
    Optional<Path> dataDir();

    /**
     * The exclusive scope (a root shared by several data dirs) whose {@code server.scope.lock}
     * warden also holds: {@code $LILBEE_EXCLUSIVE_SCOPE}, else none.
     */
    @WithDefault("${LILBEE_EXCLUSIVE_SCOPE:}")
    Optional<Path> scopeDir();

    Lock lock();

    Startup startup();

    Liveness liveness();

    interface Lock {
        /**
         * How often the lock keeper looks again: while it holds its locks, whether each lock
         * file is still the file it locked; after an error, when to retry. Waiting for a holder
         * is not polled: the kernel wakes warden the instant the holder lets go or dies.
         */
        @WithDefault("50ms")
        Duration pollInterval();

        /** Pause before retrying a lock that failed with an error (not contention), so a broken volume is not hammered. */
        @WithDefault("1s")
        Duration errorRetry();
    }

    interface Startup {
        /**
         * When true the startup probe reports UP only once warden holds all its locks, so a
         * native sidecar keeps the engine container from starting in a standby pod.
         */
        @WithDefault("true")
        boolean requireLock();
    }

    interface Liveness {
        /**
         * How long the lock keeper may go without finishing a round before liveness reports it
         * wedged (for instance stuck on a hung volume). Waiting for another holder does not count.
         */
        @WithDefault("30s")
        Duration stallTimeout();
    }
}
