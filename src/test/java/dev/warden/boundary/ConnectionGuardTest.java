package dev.warden.boundary;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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

    private static ConnectionLimits limits(int total, int perPeer) {
        return new ConnectionLimits(total, perPeer, Duration.ofSeconds(10), Duration.ofMinutes(3), Duration.ofSeconds(75));
    }

    private static InetSocketAddress at(String address) throws Exception {
        return new InetSocketAddress(InetAddress.getByName(address), 40000);
    }

    @Test
    void everyAddressOfThePodIsOnePeerAndEveryOtherAddressItsOwn() throws Exception {
        ConnectionGuard guard = new ConnectionGuard(9096, limits(256, 32),
                new PodAddresses(Set.of(InetAddress.getByName("10.244.1.7"), InetAddress.getByName("fe80::1"))));
        for (String pod : List.of("127.0.0.1", "127.3.2.1", "::1", "10.244.1.7", "fe80::1%1")) {
            assertEquals(ConnectionGuard.POD, guard.peerOf(at(pod)), pod);
        }
        assertEquals("10.244.1.1", guard.peerOf(at("10.244.1.1")), "the node, whence the kubelet probes");
        assertEquals("10.244.1.8", guard.peerOf(at("10.244.1.8")), "another pod");
    }

    @Test
    void aPeerGetsItsShareAndItsPlaceBackWhenAConnectionCloses() {
        ConnectionGuard guard = new ConnectionGuard(9096, limits(256, 3), new PodAddresses(Set.of()));
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
    void theTotalHoldsWhateverThePeers() {
        ConnectionGuard guard = new ConnectionGuard(9095, limits(2, 32), new PodAddresses(Set.of()));
        assertTrue(guard.admit(new EmbeddedChannel()));
        assertTrue(guard.admit(new EmbeddedChannel()));
        assertFalse(guard.admit(new EmbeddedChannel()));
        assertEquals(2, guard.open());
    }
}
