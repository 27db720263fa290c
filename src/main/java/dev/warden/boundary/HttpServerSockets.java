package dev.warden.boundary;

import io.netty.channel.Channel;
import io.netty.channel.group.ChannelGroup;
import io.quarkus.runtime.annotations.RegisterForReflection;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.impl.HttpServerImpl;
import io.vertx.core.impl.VertxInternal;
import io.vertx.core.net.impl.TCPServerBase;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;

/**
 * The listening sockets of the HTTP servers Quarkus started (the API's and the management
 * interface's), as Netty channels, with the connections each has accepted so far.
 *
 * <p>Vert.x has no public hook at accept: {@code HttpServer.connectionHandler} is Quarkus's own (and
 * its {@code max-connections} is counted per event loop, and not at all on the management port). So
 * this reaches, once at start, into two private fields of Vert.x 4.5: the server's bound channel and
 * the group of channels it has handed out. Both are pinned by the Quarkus version; a Vert.x that moves
 * them fails warden's start with this class named, and the connection-cap tests fail with it.
 */
@RegisterForReflection(targets = TCPServerBase.class, classNames = "io.vertx.core.net.impl.ServerChannelLoadBalancer")
final class HttpServerSockets {

    /** One listening socket: its channel and the group of every connection it has handed to the HTTP server. */
    record Listening(int port, Channel channel, ChannelGroup accepted) {
    }

    private HttpServerSockets() {
    }

    static List<Listening> of(Vertx vertx) {
        List<Listening> sockets = new ArrayList<>();
        for (HttpServerImpl server : ((VertxInternal) vertx).sharedHttpServers().values()) {
            try {
                Future<?> bound = (Future<?>) field(TCPServerBase.class, "bindFuture").get(server);
                Object balancer = field(TCPServerBase.class, "channelBalancer").get(server);
                if (bound == null || !bound.succeeded() || balancer == null) {
                    continue;
                }
                ChannelGroup handedOut = (ChannelGroup) field(balancer.getClass(), "channelGroup").get(balancer);
                sockets.add(new Listening(server.actualPort(), (Channel) bound.result(), handedOut));
            } catch (ReflectiveOperationException | ClassCastException e) {
                throw new IllegalStateException("warden cannot reach the HTTP server's listening socket in this Vert.x version ("
                        + e + "): the connection limits need it; see HttpServerSockets", e);
            }
        }
        return sockets;
    }

    private static Field field(Class<?> type, String name) throws NoSuchFieldException {
        Field field = type.getDeclaredField(name);
        field.setAccessible(true);
        return field;
    }
}
