package dev.warden.boundary;

import dev.warden.config.WardenConfig;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.channel.Channel;
import io.vertx.core.Vertx;
import jakarta.inject.Singleton;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * Puts a {@link ConnectionGuard} in front of each of warden's listening sockets once they listen (at
 * {@code warden serve}'s start), and adopts the connections accepted before: they are counted and get
 * their deadlines like every later one.
 */
@Singleton
public class ConnectionGuards {

    private static final Logger LOG = Logger.getLogger(ConnectionGuards.class);
    private static final String NAME = "warden-connection-guard";

    private final Vertx vertx;
    private final MeterRegistry meters;
    private final WardenConfig.Http http;
    private final Duration idle;

    public ConnectionGuards(Vertx vertx, MeterRegistry meters, WardenConfig config,
            @ConfigProperty(name = "quarkus.http.idle-timeout", defaultValue = "75s") Duration idle) {
        this.vertx = vertx;
        this.meters = meters;
        this.http = config.http();
        this.idle = idle;
    }

    /**
     * Guards every listening socket not guarded yet, with its two meters.
     *
     * @throws IllegalArgumentException naming the setting, when the limits or the node's addresses are not usable
     */
    public synchronized void install() {
        ConnectionLimits limits = new ConnectionLimits(http.maxConnections(), http.maxConnectionsPerPeer(),
                http.requestHeaderTimeout(), http.requestTimeout(), idle);
        NodeAddresses node = NodeAddresses.of(http.nodeAddresses().orElse(List.of()), Path.of("/proc/self/net"));
        PodAddresses pod = PodAddresses.ofThisNamespace();
        for (HttpServerSockets.Listening socket : HttpServerSockets.of(vertx)) {
            Channel listening = socket.channel();
            if (listening.pipeline().get(NAME) != null) {
                continue;
            }
            ConnectionGuard guard = new ConnectionGuard(socket.port(), limits, pod, node);
            listening.pipeline().addFirst(NAME, guard);
            adopt(guard, socket);
            // A connection accepted just before the guard joins the group only once its event loop has registered it.
            listening.eventLoop().schedule(() -> adopt(guard, socket), 1, TimeUnit.SECONDS);
            LOG.debugf("Connection limits on port %d: %s, the node's share kept for %s", socket.port(), limits, node.known());
            String port = Integer.toString(socket.port());
            Gauge.builder("warden.http.connections", guard, ConnectionGuard::open)
                    .description("Connections open on this port, as counted at accept").tag("port", port).register(meters);
            FunctionCounter.builder("warden.http.connections.refused", guard, ConnectionGuard::refusedSoFar)
                    .description("Connections closed as they were accepted: over warden.http.max-connections or the peer's share")
                    .tag("port", port).register(meters);
        }
    }

    /**
     * Counts in (or closes) the connections the HTTP server holds that the guard has not seen. After the
     * guard is in place: one accepted since has its deadline already and is not counted twice.
     */
    private static void adopt(ConnectionGuard guard, HttpServerSockets.Listening socket) {
        for (Channel early : List.copyOf(socket.accepted())) {
            if (early.isOpen() && early.pipeline().get(RequestDeadline.NAME) == null && !guard.admit(early)) {
                early.close();
            }
        }
    }
}
