package dev.warden.boundary;

import dev.warden.config.WardenConfig;
import io.netty.channel.Channel;
import io.vertx.core.Vertx;
import jakarta.inject.Singleton;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
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
    private final ConnectionLimits limits;
    private final List<ConnectionGuard> guards = new CopyOnWriteArrayList<>();

    public ConnectionGuards(Vertx vertx, WardenConfig config,
            @ConfigProperty(name = "quarkus.http.idle-timeout", defaultValue = "75s") Duration idle) {
        this.vertx = vertx;
        WardenConfig.Http http = config.http();
        this.limits = new ConnectionLimits(http.maxConnections(), http.maxConnectionsPerPeer(), http.requestHeaderTimeout(),
                http.requestTimeout(), idle);
    }

    /** Guards every listening socket not guarded yet; returns the guards in place. */
    public synchronized List<ConnectionGuard> install() {
        PodAddresses pod = PodAddresses.ofThisNamespace();
        for (HttpServerSockets.Listening socket : HttpServerSockets.of(vertx)) {
            Channel listening = socket.channel();
            if (listening.pipeline().get(NAME) != null) {
                continue;
            }
            ConnectionGuard guard = new ConnectionGuard(socket.port(), limits, pod);
            listening.pipeline().addFirst(NAME, guard);
            // After the guard is in place: a connection accepted since has its deadline already and is not counted twice.
            for (Channel early : List.copyOf(socket.accepted())) {
                if (early.isOpen() && early.pipeline().get(RequestDeadline.NAME) == null && !guard.admit(early)) {
                    early.close();
                }
            }
            guards.add(guard);
        }
        LOG.debugf("Connection limits on ports %s: %s", guards.stream().map(ConnectionGuard::port).toList(), limits);
        return List.copyOf(guards);
    }

    public List<ConnectionGuard> guards() {
        return List.copyOf(guards);
    }
}
