package dev.warden.boundary;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NodeAddressesTest {

    @TempDir
    Path net;

    /** A pod's tables as the kernel writes them: a default route via the node's end of the link, and the link's own. */
    private void tables(String route, String ipv6Route) throws IOException {
        Files.writeString(net.resolve("route"), route);
        Files.writeString(net.resolve("ipv6_route"), ipv6Route);
    }

    @Test
    void thePodsDefaultGatewaysAreTheNodes() throws IOException {
        tables("""
                Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
                eth0\t00000000\t0101F40A\t0003\t0\t0\t0\t00000000\t0\t0\t0
                eth0\t0001F40A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
                eth0\t0002F40A\t0301F40A\t0003\t0\t0\t0\t00FFFFFF\t0\t0\t0
                """, """
                00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe80000000000000000000000000000a 00000400 00000001 00000000 00000003     eth0
                fd000000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0
                """);
        assertEquals(Set.of(InetAddress.ofLiteral("10.244.1.1"), InetAddress.ofLiteral("fe80::a")),
                NodeAddresses.defaultGateways(net), "the default routes' gateways, not another route's");
    }

    @Test
    void theConfiguredAddressesJoinTheGatewaysAndAPeerWithAScopeMatches() throws IOException {
        tables("", "");
        NodeAddresses node = NodeAddresses.of(List.of("192.168.5.4", " fd00::4 ", ""), net);
        assertEquals(Set.of(InetAddress.ofLiteral("192.168.5.4"), InetAddress.ofLiteral("fd00::4")), node.known());
        assertTrue(node.contains(InetAddress.ofLiteral("fd00::4")));
        assertFalse(node.contains(InetAddress.ofLiteral("192.168.5.5")));
    }

    @Test
    void aNameOrGarbageIsRefusedNamingTheSettingAndNothingIsLookedUp() throws IOException {
        tables("", "");
        for (String entry : List.of("localhost", "node-1.example", "10.0.0.300")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> NodeAddresses.of(List.of(entry), net));
            assertTrue(e.getMessage().startsWith("warden.http.node-addresses: \"" + entry + "\" is not an IP address"), e.getMessage());
        }
    }

    @Test
    void unreadableOrMalformedTablesNameNoGateway() throws IOException {
        assertEquals(Set.of(), NodeAddresses.defaultGateways(net.resolve("missing")));
        tables("eth0\t00000000\tZZZZZZZZ\t0003\t0\t0\t0\t00000000\n"
                + "eth0\t00000000\n", "00000000000000000000000000000000 00 0 00 short\n");
        assertEquals(Set.of(), NodeAddresses.defaultGateways(net));
    }
}
