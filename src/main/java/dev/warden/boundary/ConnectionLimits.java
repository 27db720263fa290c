package dev.warden.boundary;

import java.time.Duration;

/**
 * What one of warden's listening sockets admits: {@code total} connections open at once, {@code perPeer}
 * of them from one peer (every process of this pod counts as one, and so does the node, whose share is kept
 * for it), and the deadlines a connection must
 * meet whatever bytes it trickles: a complete request head within {@code header} of the accept (or
 * {@code idle} of the last response), and the first byte of an answer within {@code request} of the head.
 */
record ConnectionLimits(int total, int perPeer, Duration header, Duration request, Duration idle) {

    public ConnectionLimits {
        if (total < 1 || perPeer < 1) {
            throw new IllegalArgumentException("warden.http.max-connections and warden.http.max-connections-per-peer must be"
                    + " at least 1 (they are " + total + " and " + perPeer + ")");
        }
        if (total < 2 * perPeer) {
            throw new IllegalArgumentException("warden.http.max-connections (" + total + ") must be at least twice"
                    + " warden.http.max-connections-per-peer (" + perPeer + "): the node, whence the kubelet probes, keeps a"
                    + " peer's share of the total for itself, and the other peers need room for at least one share beside it");
        }
        for (Duration deadline : new Duration[] {header, request, idle}) {
            if (deadline.isNegative() || deadline.isZero()) {
                throw new IllegalArgumentException("warden.http's deadlines must be positive: " + deadline);
            }
        }
    }
}
