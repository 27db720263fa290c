package dev.warden.boundary;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jboss.logging.Logger;

/**
 * Counts the connections of one listening socket as the kernel hands them over, before the HTTP
 * server sees them: one over {@link ConnectionLimits#total()}, or over {@link ConnectionLimits#perPeer()}
 * from its peer, is closed at once; every admitted one gets a {@link RequestDeadline}. Every process of
 * this pod is one peer ({@link PodAddresses}), so a neighbour that opens connections until it is refused
 * has taken its own share and none of the kubelet's, which probes from the node.
 */
@ChannelHandler.Sharable
final class ConnectionGuard extends ChannelInboundHandlerAdapter {

    private static final Logger LOG = Logger.getLogger(ConnectionGuard.class);
    static final String POD = "this pod";
    private static final long REPORT_EVERY = TimeUnit.MINUTES.toNanos(1);

    private final int port;
    private final ConnectionLimits limits;
    private final PodAddresses pod;
    private final AtomicInteger open = new AtomicInteger();
    /** Open connections by peer; an entry lives only while its peer has one open, so there are at most {@code total}. */
    private final ConcurrentHashMap<String, Integer> byPeer = new ConcurrentHashMap<>();
    private final AtomicLong refused = new AtomicLong();
    private final AtomicLong reportedAt = new AtomicLong(System.nanoTime() - REPORT_EVERY);

    ConnectionGuard(int port, ConnectionLimits limits, PodAddresses pod) {
        this.port = port;
        this.limits = limits;
        this.pod = pod;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof Channel child && !admit(child)) {
            // Not yet registered with an event loop: closed as Netty's own acceptor closes a child it cannot take.
            child.unsafe().closeForcibly();
            return;
        }
        ctx.fireChannelRead(msg);
    }

    /**
     * Counts {@code child} in, with its release when it closes and its deadlines, or refuses it. Also
     * for a connection the HTTP server had accepted before this guard was in place.
     */
    boolean admit(Channel child) {
        String peer = peerOf(child.remoteAddress());
        if (!take(peer)) {
            refused(peer);
            return false;
        }
        child.closeFuture().addListener(closed -> release(peer));
        child.pipeline().addFirst(RequestDeadline.NAME, new RequestDeadline(limits));
        return true;
    }

    private boolean take(String peer) {
        if (open.incrementAndGet() > limits.total()) {
            open.decrementAndGet();
            return false;
        }
        boolean[] taken = {false};
        byPeer.compute(peer, (key, count) -> {
            int now = count == null ? 0 : count;
            if (now >= limits.perPeer()) {
                return count;
            }
            taken[0] = true;
            return now + 1;
        });
        if (!taken[0]) {
            open.decrementAndGet();
        }
        return taken[0];
    }

    private void release(String peer) {
        byPeer.computeIfPresent(peer, (key, count) -> count <= 1 ? null : count - 1);
        open.decrementAndGet();
    }

    String peerOf(SocketAddress address) {
        if (address instanceof InetSocketAddress inet && inet.getAddress() != null) {
            return pod.contains(inet.getAddress()) ? POD : inet.getAddress().getHostAddress();
        }
        // A Unix socket's peer is on this machine: the pod's.
        return POD;
    }

    /** One line a minute at most, whatever a neighbour makes of the refusals. */
    private void refused(String peer) {
        long count = refused.incrementAndGet();
        long last = reportedAt.get();
        long now = System.nanoTime();
        if (now - last >= REPORT_EVERY && reportedAt.compareAndSet(last, now)) {
            LOG.warnf("Refused connections on port %d: %d so far, the latest from %s (%d open, at most %d, and %d from one peer:"
                    + " warden.http.max-connections, warden.http.max-connections-per-peer; every process of this pod is one peer)",
                    port, count, peer, open.get(), limits.total(), limits.perPeer());
        }
    }

    /** Connections open now. */
    int open() {
        return open.get();
    }

    /** Connections refused since the start. */
    long refusedSoFar() {
        return refused.get();
    }
}
