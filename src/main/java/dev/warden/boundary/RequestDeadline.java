package dev.warden.boundary;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Deadlines no byte extends, first in a connection's pipeline: a request head (up to its blank line)
 * complete within {@link ConnectionLimits#header()} of the accept and within {@link ConnectionLimits#idle()}
 * of the last bytes warden wrote; an answer begun within {@link ConnectionLimits#request()} of the head.
 * A connection that misses one is closed. An idle timeout alone is reset by every byte, so a peer
 * trickling a request line one byte at a time would hold its connection for as long as it liked.
 *
 * <p>The head's end is found in the raw bytes, not parsed: a blank line inside a body only moves the
 * connection to the request deadline early, which is bounded as well.
 */
final class RequestDeadline extends ChannelDuplexHandler {

    static final String NAME = "warden-request-deadline";
    private static final byte[] END_OF_HEAD = {'\r', '\n', '\r', '\n'};

    private final ConnectionLimits limits;
    private ScheduledFuture<?> timer;
    /** How much of {@link #END_OF_HEAD} the bytes so far end with. */
    private int matched;
    private boolean headSeen;

    RequestDeadline(ConnectionLimits limits) {
        this.limits = limits;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        if (ctx.channel().isRegistered()) {
            arm(ctx, limits.header());
        }
    }

    @Override
    public void channelRegistered(ChannelHandlerContext ctx) throws Exception {
        if (timer == null) {
            arm(ctx, limits.header());
        }
        super.channelRegistered(ctx);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
        if (!headSeen && msg instanceof ByteBuf bytes && endsAHead(bytes)) {
            headSeen = true;
            arm(ctx, limits.request());
        }
        super.channelRead(ctx, msg);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) throws Exception {
        // warden answers: the next head is due within the idle time of these bytes.
        headSeen = false;
        matched = 0;
        arm(ctx, limits.idle());
        super.write(ctx, msg, promise);
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        cancel();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        cancel();
        super.channelInactive(ctx);
    }

    private boolean endsAHead(ByteBuf bytes) {
        for (int i = bytes.readerIndex(), end = bytes.writerIndex(); i < end; i++) {
            byte b = bytes.getByte(i);
            if (b == END_OF_HEAD[matched]) {
                matched++;
                if (matched == END_OF_HEAD.length) {
                    matched = 0;
                    return true;
                }
            } else {
                matched = b == END_OF_HEAD[0] ? 1 : 0;
            }
        }
        return false;
    }

    private void arm(ChannelHandlerContext ctx, Duration deadline) {
        cancel();
        timer = ctx.executor().schedule(() -> ctx.close(), deadline.toNanos(), TimeUnit.NANOSECONDS);
    }

    private void cancel() {
        if (timer != null) {
            timer.cancel(false);
            timer = null;
        }
    }
}
