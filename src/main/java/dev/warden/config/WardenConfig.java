package dev.warden.config;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * Everything warden can be told. Each property is also an environment variable: {@code
 * warden.data-root} is {@code WARDEN_DATA_ROOT}. The defaults resolve paths exactly as lilbee
 * does, so warden guards the same files lilbee uses without being told.
 */
@ConfigMapping(prefix = "warden")
public interface WardenConfig {

    /**
     * lilbee's data root. Unset (the default): exactly where {@code lilbee serve} puts it in this
     * environment: {@code $LILBEE_DATA}, else {@code $LILBEE_DATA_ROOT}, else {@code data_root} in
     * config.toml, else a {@code .lilbee/} directory above the working directory, else
     * {@code $XDG_DATA_HOME/lilbee}, else {@code ~/.local/share/lilbee} (see {@link LilbeeEnvironment}).
     * {@code serve --data-root} overrides it.
     */
    Optional<Path> dataRoot();

    /**
     * The data dir whose {@code server.lock} warden holds. Unset: {@code <data-root>/data}, the
     * only data dir {@code lilbee serve} uses ({@code $LILBEE_DATA_DIR} does not move it).
     */
    Optional<Path> dataDir();

    /**
     * The exclusive scope (a root shared by several data dirs) whose {@code server.scope.lock}
     * warden also holds. Unset: {@code $LILBEE_EXCLUSIVE_SCOPE}, else none.
     */
    Optional<Path> scopeDir();

    /**
     * The LanceDB dir whose {@code .lock} is lilbee's write lock. Unset:
     * {@code <data-root>/data/lancedb}, as {@code lilbee serve} uses ({@code $LILBEE_LANCEDB_DIR}
     * does not move it).
     */
    Optional<Path> lancedbDir();

    /**
     * lilbee's machine engine slot, the first of the engine dirs the reaper watches. Unset:
     * {@code $LILBEE_ENGINE_DIR}, else {@code $XDG_STATE_HOME/lilbee/engine}, else
     * {@code ~/.local/state/lilbee/engine}. The data root's overflow dir
     * ({@code <data-root>/data/engine}) and the data dir itself (older lilbee versions recorded
     * engines there) are watched as well.
     */
    Optional<Path> engineDir();

    /**
     * {@code hold} (the default): warden holds {@code server.lock} (and the scope lock) itself, for
     * an engine pod. {@code gate}: warden never takes them; it elects one pod through
     * {@code <data dir>/warden-gate.lock} and its startup probe lets that pod's {@code lilbee serve}
     * start. {@code serve --mode} overrides it.
     */
    @WithDefault("hold")
    Mode mode();

    Gate gate();

    Engine engine();

    Reaper reaper();

    Api api();

    Events events();

    /** Kubernetes Events on warden's own pod. */
    interface Events {
        /**
         * Whether warden records what its gate and reaper decide as Events on its own pod ({@code warden.gate.role.pod},
         * else {@code $POD_NAME}; in {@code warden.gate.role.namespace}, else the service account's), through the service
         * account mounted for it: its Role must allow create on events (the chart's does, with events.enabled).
         */
        @WithDefault("false")
        boolean enabled();
    }

    Http http();

    Lock lock();

    Startup startup();

    Liveness liveness();

    Metrics metrics();

    Memory memory();

    interface Gate {
        /**
         * Where this pod's {@code lilbee serve} answers, e.g. {@code http://127.0.0.1:7433/api/health}:
         * readiness then also needs an answer (any status below 500: lilbee asks a token even there,
         * and its 401 shows it serves). Unset: readiness needs only lilbee's {@code server.lock}.
         */
        Optional<java.net.URI> healthUrl();

        /** How long one look at {@code health-url} may take, the whole answer's headers included. */
        @WithDefault("1s")
        Duration healthTimeout();

        /**
         * {@code file}: the gate lock alone elects (pods on one kernel, or a filesystem whose locks span
         * nodes). {@code lease}: a coordination.k8s.io/v1 Lease elects as well, for pods on different nodes;
         * the gate lock is still taken, once the Lease is held.
         */
        @WithDefault("file")
        Election election();

        /**
         * How long the elected pod may go without serving, while no lilbee of it runs (its container is down, in the
         * kubelet's back-off, or lilbee keeps failing), before warden lets the gate go to a standby, whose lilbee may.
         */
        @WithDefault("10s")
        Duration handoverAfter();

        /**
         * Where {@code warden step-down} asks the serving warden of this container to hand the gate over: a Unix socket
         * in a directory of warden's container alone (the chart's /tmp, an emptyDir no other container mounts), answered
         * only to a peer of warden's own UID. Its directory is created if missing.
         */
        @WithDefault("/tmp/warden/control.sock")
        java.nio.file.Path controlSocket();

        /**
         * How long a warden elected on a gate file it has not seen at the path for this long waits before its pod's
         * lilbee may start. Another pod's lilbee runs under the gate lock for as long as it lives, so nobody is elected
         * before it is gone, unless the gate file was replaced (a lilbee reset deletes it; any writer of the data dir
         * can rename it): that lilbee is stopped within {@code supervisor.permit} plus the longer of
         * {@code supervisor.grace} and {@code supervisor.stall-bound}, which this must exceed (checked at start). On a
         * fresh volume, and after a reset, the first lilbee starts this long after its warden.
         */
        @WithDefault("10s")
        Duration settle();

        /**
         * How long a whole node (its kubelet with it: a VM paused) may freeze, at whatever moment, and no two lilbees
         * serve: the timings must leave at least this much (checked at start). With the defaults they leave 3 s, in
         * file and in lease election.
         */
        @WithDefault("1s")
        Duration pauseMargin();

        Supervisor supervisor();

        Lease lease();

        /**
         * How clients reach the pod that serves. {@code readiness}: only that pod is Ready, a standby never is.
         * {@code role}: every healthy pod is Ready (the chart's readiness probe asks {@code /q/health/group/routable})
         * and the Service, which selects no pod, routes through its Endpoints ({@code role.endpoints}), which the
         * serving warden writes to its own pod alone while {@code /q/health/ready} is UP, and any warden takes its pod
         * out of once it no longer is. {@code /q/health/ready} means the same in both.
         */
        @WithDefault("readiness")
        Routing routing();

        Role role();

        /** How the gate is elected. */
        enum Election {
            FILE, LEASE
        }

        /** How clients reach the pod that serves. */
        enum Routing {
            READINESS, ROLE
        }

        /** Role routing: the Endpoints warden writes, and what of this pod goes in it. */
        interface Role {
            /**
             * The Endpoints warden writes: the Service's name (a Service that selects no pod routes through the
             * Endpoints of its own name). The chart sets it.
             */
            Optional<String> endpoints();

            /**
             * The Service's ports, each with the port it is served on in this pod: {@code http=7433,api=8080}. The
             * chart sets them.
             */
            Optional<List<String>> ports();

            /** This pod's address, which the Endpoints routes to while it serves. Unset: {@code $POD_IP} (the downward API). */
            Optional<String> address();

            /** warden's own pod's name, which the Endpoints and Events name. Unset: {@code $POD_NAME} (the downward API). */
            Optional<String> pod();

            /** warden's own pod's namespace, where the Endpoints and Events are. Unset: its service account's. */
            Optional<String> namespace();
        }

        /**
         * lilbee's supervisor (helm/warden/files/lilbee-supervisor.py), the dead-man switch that runs lilbee only
         * while warden renews its permit: where it connects, and the timings warden's safety counts on (the chart
         * gives the supervisor and the kubelet the same values).
         */
        interface Supervisor {
            /**
             * The switch socket, on a volume only warden's and lilbee's containers mount (the chart's emptyDir at
             * /run/warden). Its directory is created if missing.
             */
            @WithDefault("/run/warden/switch.sock")
            java.nio.file.Path socket();

            /** The longest one permit lasts: warden renews it twice a second while lilbee may run. */
            @WithDefault("5s")
            Duration permit();

            /** The supervisor's time between SIGTERM and SIGKILL of lilbee's process group (its --grace). */
            @WithDefault("2s")
            Duration grace();

            /**
             * How soon the kubelet restarts a supervisor that stopped turning (SIGSTOP), which then cannot stop
             * lilbee: its container's liveness probe, period times failures plus timeout plus its grace (the chart's
             * 1 s, 2, 1 s and 1 s: 4 s).
             */
            @WithDefault("4s")
            Duration stallBound();

            /** The supervisor's UID: a peer of another UID on the switch socket is not listened to. Unset: warden's own. */
            Optional<Integer> uid();
        }

        interface Lease {
            /** The Lease's name. */
            @WithDefault("warden-gate")
            String name();

            /** The Lease's namespace. Unset: the pod's own (its service account's). */
            Optional<String> namespace();

            /** Who contends. Unset: {@code $POD_NAME} (the downward API), else the host name. */
            Optional<String> identity();

            /** How long a Lease holds without renewal (client-go's default). */
            @WithDefault("15s")
            Duration duration();

            /** A leader that has not renewed for this long steps down; no permit it gave outlasts it. */
            @WithDefault("10s")
            Duration renewDeadline();

            /** How often to try to acquire or renew; also each API request's time limit. */
            @WithDefault("2s")
            Duration retryPeriod();
        }
    }

    interface Engine {
        /**
         * A llama-swap that lilbee did not start (its own container in the pod), e.g.
         * {@code http://127.0.0.1:8080}. It needs no record: when the last user leaves and the idle
         * time passes, warden unloads its weights. warden never signals it.
         */
        Optional<java.net.URI> url();

        /** Sent as {@code Authorization: Bearer <key>} when llama-swap has {@code apiKeys} set. */
        Optional<String> apiKey();

        /**
         * A file holding the key (a mounted Secret), read at start, used when {@code api-key} is
         * unset: unlike an environment variable, it is not in every process's view of warden's.
         */
        Optional<Path> apiKeyFile();

        /**
         * Whether readiness also needs the engine to answer. Unset: on when an engine is recorded
         * in the engine dir or {@code warden.engine.url} is set.
         */
        Optional<Boolean> readiness();

        /** How long a signalled engine gets to exit after SIGTERM before SIGKILL (llama-swap drains HTTP). */
        @WithDefault("5s")
        Duration termTimeout();

        /** How long to wait for a SIGKILLed process to be gone before logging that it survived. */
        @WithDefault("5s")
        Duration killTimeout();

        /** How long {@code warden engine stop} waits for the build lock: a build in flight finishes first. */
        @WithDefault("90s")
        Duration buildLockWait();

        /**
         * Client timeout for an unload. llama-swap answers once every model process has exited,
         * up to its unloadTimeout (10 s) per model, so this must be longer.
         */
        @WithDefault("30s")
        Duration unloadTimeout();

        /** Connect timeout for {@code /running}: the engine is on loopback, so a slow connect is no engine. */
        @WithDefault("500ms")
        Duration connectTimeout();

        /** Read timeout for {@code /running}. */
        @WithDefault("2s")
        Duration readTimeout();
    }

    interface Reaper {
        /** Whether {@code serve} watches the engine dir at all. */
        @WithDefault("true")
        boolean enabled();

        /** One pass of the last-user-out rule this often (lilbee's reaper polls every second). */
        @WithDefault("1s")
        Duration interval();

        /**
         * How long a kept-warm engine stays loaded with no user when its markers name no minutes
         * (lilbee's engine_idle_ttl_minutes default; lilbee writes its own value into its marker).
         */
        @WithDefault("5m")
        Duration idleTtl();

        /** The reaper lock's file name in the engine dir: one reaper per engine dir. */
        @WithDefault("engine-reaper.lock")
        String lockName();

        /** A starting user probes the reaper lock for an instant; a claim that waits this long outlasts any probe. */
        @WithDefault("2s")
        Duration claimTimeout();
    }

    interface Api {
        /** Bearer token for {@code POST /api/v1/engine/stop|unload}; with none, those answer 403. */
        Optional<String> token();

        /** A file holding the token (a mounted Secret); read when a request arrives. */
        Optional<Path> tokenFile();
    }

    /**
     * What each of warden's two ports (the API's and the management interface's) admits, counted as the
     * kernel hands a connection over. Every process of this pod (from loopback or the pod's own address)
     * is one peer, so a neighbour container cannot take the room the kubelet's probes need.
     */
    interface Http {
        /** Connections open at once on each port; one more is closed at once. */
        @WithDefault("256")
        int maxConnections();

        /** Connections open at once on each port from one peer address (this pod's processes together are one). */
        @WithDefault("32")
        int maxConnectionsPerPeer();

        /**
         * The node's addresses, whence the kubelet probes (the chart gives the pod's status.hostIPs): with this pod's
         * default gateways, one peer whose share is kept for it, so that no number of other peers can crowd out the
         * kubelet's probes. Address literals, comma-separated.
         */
        Optional<List<String>> nodeAddresses();

        /**
         * Time from a connection's accept to the end of its request's head; the bytes trickled meanwhile
         * do not extend it. After an answer the next head is due within quarkus.http.idle-timeout.
         */
        @WithDefault("10s")
        Duration requestHeaderTimeout();

        /** Time from a request's head to the first byte of warden's answer (a trickled body included). */
        @WithDefault("3m")
        Duration requestTimeout();
    }

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

        /**
         * How often the holder of a lock that should exclude every pod (hold mode's server.lock, gate mode's gate lock
         * in file election) writes its heartbeat beside it, {@code <lock>.heartbeat}: a pod whose lock did not reach
         * through its own mount finds the beats and stands by. A lock taken while that file names a holder of another
         * node or mount is held only once the file stays still for 4 beats (1 s by default; in gate mode at least the
         * permit and the overrun); one taken where the file names a holder of this node and mount is held at once. At
         * least {@code poll-interval}: a holder beats at most once a round (checked at start).
         */
        @WithDefault("250ms")
        Duration heartbeat();
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
         * wedged (for instance stuck on a hung volume), and the Lease election without asking the API
         * server anything. Waiting for another holder does not count, nor does an unreachable API server.
         */
        @WithDefault("30s")
        Duration stallTimeout();
    }

    interface Metrics {
        /**
         * The {@code release} label on warden's series at {@code /q/metrics}: which pods serve one data dir
         * together, so the alerts count servers per release (the chart sets its release's name). Unset: no
         * such label, and the alerts group by namespace and data dir alone.
         */
        Optional<String> release();
    }

    interface Memory {
        /**
         * Once {@code serve} has run this long, and as long after each engine the reaper stops or unloads, the pages of
         * warden's own files (the native executable, the JVM image's AOT cache: files warden's UID owns) are given back
         * to the kernel ({@code MADV_PAGEOUT}). Starting touches nearly all of them (the kernel maps 64 KiB around each
         * page read), a stop or an unload what only it runs; running needs far fewer, and the kernel maps back what it
         * touches, from then on page by page ({@code MADV_RANDOM}; code 64 KiB at a time still, as the kernel reads
         * ahead for it whatever the advice). {@code 0s}: never.
         */
        @WithDefault("10s")
        Duration releaseStartPagesAfter();
    }
}
