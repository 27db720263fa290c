package dev.warden.boundary;

import java.io.BufferedReader;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;

/**
 * The addresses the kubelet's probes come from, which keep a share of warden's connections no other peer can
 * take: those configured (the chart gives the node's, {@code status.hostIPs}) and this pod's default gateways,
 * the node's end of the pod's link on a bridge or veth network, whence a kubelet probes there. Only the node
 * owns them; a hostNetwork pod of the same node connects from them too, so it shares the kubelet's room.
 */
record NodeAddresses(Set<InetAddress> known) {

    /** Far more routes than a pod has: a routing table is never read past it. */
    private static final int MAX_ROUTES = 4096;

    public NodeAddresses {
        known = Set.copyOf(known);
    }

    static NodeAddresses none() {
        return new NodeAddresses(Set.of());
    }

    /**
     * {@code configured} (address literals, no names: nothing here waits on DNS) and the default gateways of
     * {@code procNet}'s {@code route} and {@code ipv6_route}.
     *
     * @throws IllegalArgumentException naming the setting and the entry that is not an address
     */
    static NodeAddresses of(List<String> configured, Path procNet) {
        Set<InetAddress> addresses = new HashSet<>();
        for (String entry : configured) {
            String literal = entry.strip();
            if (literal.isEmpty()) {
                continue;
            }
            try {
                addresses.add(InetAddress.ofLiteral(literal));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("warden.http.node-addresses: \"" + literal + "\" is not an IP address;"
                        + " give the node's addresses as literals (the chart sets them from the pod's status.hostIPs)");
            }
        }
        addresses.addAll(defaultGateways(procNet));
        return new NodeAddresses(addresses);
    }

    /** A link-local gateway's peer comes with the scope of the interface it came in on; the table names none. */
    boolean contains(InetAddress address) {
        return known.contains(PodAddresses.withoutScope(address));
    }

    /**
     * From {@code route} (IPv4: after the interface, destination, gateway and mask in little-endian hex) and {@code ipv6_route} (destination,
     * its prefix length, ..., next hop in hex). A table that cannot be read names no gateway.
     */
    static Set<InetAddress> defaultGateways(Path procNet) {
        Set<InetAddress> gateways = new HashSet<>();
        for (String[] route : rows(procNet.resolve("route"))) {
            if (route.length > 7 && "00000000".equals(route[1]) && "00000000".equals(route[7]) && route[2].length() == 8
                    && !"00000000".equals(route[2])) {
                byte[] little = hex(route[2]);
                if (little != null) {
                    address(new byte[] {little[3], little[2], little[1], little[0]}, gateways);
                }
            }
        }
        String anywhere = "0".repeat(32);
        for (String[] route : rows(procNet.resolve("ipv6_route"))) {
            if (route.length > 4 && anywhere.equals(route[0]) && "00".equals(route[1]) && route[4].length() == 32
                    && !anywhere.equals(route[4])) {
                byte[] hop = hex(route[4]);
                if (hop != null) {
                    address(hop, gateways);
                }
            }
        }
        return gateways;
    }

    private static List<String[]> rows(Path table) {
        try (BufferedReader reader = Files.newBufferedReader(table)) {
            return reader.lines().limit(MAX_ROUTES).map(line -> line.strip().split("\\s+")).toList();
        } catch (IOException | java.io.UncheckedIOException e) {
            return List.of();
        }
    }

    private static byte[] hex(String digits) {
        try {
            return HexFormat.of().parseHex(digits);
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    private static void address(byte[] raw, Set<InetAddress> into) {
        try {
            into.add(InetAddress.getByAddress(raw));
        } catch (java.net.UnknownHostException e) {
            // Only a length other than 4 or 16 is refused, which the callers never pass.
        }
    }
}
