package dev.warden.boundary;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.embedded.EmbeddedChannel;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ConnectionGuardTest {

    /** The node's address and its link-local gateway, as the routing table names it (without a scope). */
    private static final NodeAddresses NODE = new NodeAddresses(Set.of(InetAddress.ofLiteral("10.244.1.1"),
            InetAddress.ofLiteral("fe80::a")));

    private static ConnectionLimits limits(int total, int perPeer) {
        return new ConnectionLimits(total, perPeer, Duration.ofSeconds(10), Duration.ofMinutes(3), Duration.ofSeconds(75));
    }

    private static InetSocketAddress at(String address) throws Exception {
        return new InetSocketAddress(InetAddress.getByName(address), 40000);
    }

    @Test
    void everyAddressOfThePodIsOnePeerAndEveryOtherAddressItsOwn() throws Exception {
        ConnectionGuard guard = new ConnectionGuard(9096, limits(256, 32),
                new PodAddresses(Set.of(InetAddress.getByName("10.244.1.7"), InetAddress.getByName("fe80::1"))), NODE);
        for (String pod : List.of("127.0.0.1", "127.3.2.1", "::1", "10.244.1.7", "fe80::1%1")) {
            assertEquals(ConnectionGuard.POD, guard.peerOf(at(pod)), pod);
        }
        assertEquals(ConnectionGuard.NODE, guard.peerOf(at("10.244.1.1")), "the node, whence the kubelet probes");
        assertEquals(ConnectionGuard.NODE, guard.peerOf(at("fe80::a%2")), "the node's link-local gateway");
        assertEquals("10.244.1.8", guard.peerOf(at("10.244.1.8")), "another pod");
    }

    @Test
    void aPeerGetsItsShareAndItsPlaceBackWhenAConnectionCloses() {
        ConnectionGuard guard = new ConnectionGuard(9096, limits(256, 3), new PodAddresses(Set.of()), NodeAddresses.none());
        List<EmbeddedChannel> admitted = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            EmbeddedChannel connection = new EmbeddedChannel();
            assertTrue(guard.admit(connection));
            admitted.add(connection);
        }
        assertFalse(guard.admit(new EmbeddedChannel()), "a fourth from the same peer");
        assertEquals(3, guard.open());
        assertEquals(1, guard.refusedSoFar());
        admitted.getFirst().close();
        assertEquals(2, guard.open());
        assertTrue(guard.admit(new EmbeddedChannel()), "its place is free again");
    }

    @Test
    void theTotalHoldsWhateverThePeers() throws Exception {
        ConnectionGuard guard = new ConnectionGuard(9095, limits(2, 1), new PodAddresses(Set.of()), NodeAddresses.none());
        assertTrue(guard.admit(from("10.244.1.8")));
        assertTrue(guard.admit(from("10.244.1.9")));
        assertFalse(guard.admit(from("10.244.1.10")));
        assertEquals(2, guard.open());
    }

    /** Four times as many other peers as the total holds shares, each taking all it can: the node still gets its own. */
    @Test
    void theNodesShareIsKeptForItWhateverTheNumberOfOtherPeers() throws Exception {
        ConnectionGuard guard = new ConnectionGuard(9096, limits(8, 2), new PodAddresses(Set.of()), NODE);
        int admitted = 0;
        for (int peer = 0; peer < 4 * 8 / 2; peer++) {
            for (int i = 0; i < 3; i++) {
                admitted += guard.admit(from("10.244.2." + (peer + 10))) ? 1 : 0;
            }
        }
        for (int i = 0; i < 3; i++) {
            admitted += guard.admit(new EmbeddedChannel()) ? 1 : 0;
        }
        assertEquals(6, admitted, "the other peers and this pod share the total less the node's 2");
        List<EmbeddedChannel> probes = List.of(from("10.244.1.1"), from("10.244.1.1"));
        for (EmbeddedChannel probe : probes) {
            assertTrue(guard.admit(probe), "the kubelet's probe");
        }
        assertFalse(guard.admit(from("10.244.1.1")), "the node too keeps to its share");
        assertEquals(8, guard.open(), "the total holds");
        probes.getFirst().close();
        assertFalse(guard.admit(from("10.244.2.10")), "a place the node lets go stays the node's");
        assertTrue(guard.admit(from("10.244.1.1")));
    }

    @Test
    void aTotalWithoutRoomForTheNodesShareBesideAnotherPeersIsRefusedNamingBoth() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> limits(256, 256));
        assertTrue(e.getMessage().contains("warden.http.max-connections (256) must be at least twice"
                + " warden.http.max-connections-per-peer (256)"), e.getMessage());
    }

    /** A connection from {@code address}, as the kernel hands it over. */
    private static EmbeddedChannel from(String address) throws Exception {
        InetSocketAddress remote = at(address);
        return new EmbeddedChannel() {
            @Override
            protected java.net.SocketAddress remoteAddress0() {
                return remote;
            }
        };
    }
}
