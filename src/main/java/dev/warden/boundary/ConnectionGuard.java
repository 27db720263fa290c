package dev.warden.boundary;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import java.net.InetAddress;
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
 * this pod is one peer ({@link PodAddresses}), and so is the node ({@link NodeAddresses}), whence the
 * kubelet probes: its share is kept for it, so the other peers together get the total less that share, and
 * however many of them hold theirs, the kubelet's probes are let in.
 */
@ChannelHandler.Sharable
final class ConnectionGuard extends ChannelInboundHandlerAdapter {

    private static final Logger LOG = Logger.getLogger(ConnectionGuard.class);
    static final String POD = "this pod";
    static final String NODE = "the node";
    private static final long REPORT_EVERY = TimeUnit.MINUTES.toNanos(1);

    private final int port;
    private final ConnectionLimits limits;
    private final PodAddresses pod;
    private final NodeAddresses node;
    /** The places only the node's connections may take: its share, once its addresses are known. */
    private final int reserved;
    private final AtomicInteger open = new AtomicInteger();
    /** Open connections from every peer but the node. */
    private final AtomicInteger others = new AtomicInteger();
    /** Open connections by peer; an entry lives only while its peer has one open, so there are at most {@code total}. */
    private final ConcurrentHashMap<String, Integer> byPeer = new ConcurrentHashMap<>();
    private final AtomicLong refused = new AtomicLong();
    private final AtomicLong reportedAt = new AtomicLong(System.nanoTime() - REPORT_EVERY);

    ConnectionGuard(int port, ConnectionLimits limits, PodAddresses pod, NodeAddresses node) {
        this.port = port;
        this.limits = limits;
        this.pod = pod;
        this.node = node;
        this.reserved = node.known().isEmpty() ? 0 : limits.perPeer();
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

    /** The node within its share, which no one else takes; every other peer within its own and the rest of the total. */
    private boolean take(String peer) {
        boolean fromNode = NODE.equals(peer);
        if (!fromNode && others.incrementAndGet() > limits.total() - reserved) {
            others.decrementAndGet();
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
            if (!fromNode) {
                others.decrementAndGet();
            }
            return false;
        }
        open.incrementAndGet();
        return true;
    }

    private void release(String peer) {
        byPeer.computeIfPresent(peer, (key, count) -> count <= 1 ? null : count - 1);
        if (!NODE.equals(peer)) {
            others.decrementAndGet();
        }
        open.decrementAndGet();
    }

    String peerOf(SocketAddress address) {
        if (address instanceof InetSocketAddress inet && inet.getAddress() != null) {
            InetAddress peer = inet.getAddress();
            if (pod.contains(peer)) {
                return POD;
            }
            return node.contains(peer) ? NODE : peer.getHostAddress();
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
                    + " warden.http.max-connections, warden.http.max-connections-per-peer; every process of this pod is one peer,"
                    + " and the node's %d are kept for it)",
                    port, count, peer, open.get(), limits.total(), limits.perPeer(), reserved);
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
