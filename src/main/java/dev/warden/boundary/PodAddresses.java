package dev.warden.boundary;

import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The addresses a connection from inside this pod comes from: the whole loopback range (any process
 * may bind any 127.x.y.z as its source) and every address of this network namespace's interfaces (a
 * container of the pod connecting to the pod IP). A process of the pod can pick any of them, so they
 * count as one peer; the kubelet and every other pod come from addresses that are not the pod's own.
 */
record PodAddresses(Set<InetAddress> own) {

    public PodAddresses {
        own = Set.copyOf(own);
    }

    /** This network namespace's addresses, read once: a process without CAP_NET_ADMIN cannot add any. */
    static PodAddresses ofThisNamespace() {
        try {
            return new PodAddresses(NetworkInterface.networkInterfaces().flatMap(NetworkInterface::inetAddresses)
                    .map(PodAddresses::withoutScope).collect(Collectors.toSet()));
        } catch (SocketException e) {
            // Without the list, loopback alone is known to be the pod's.
            return new PodAddresses(Set.of());
        }
    }

    boolean contains(InetAddress address) {
        return address.isLoopbackAddress() || own.contains(withoutScope(address));
    }

    /** fe80::1%eth0 and fe80::1 name one address here: a link-local peer's scope is the interface it came in on. */
    static InetAddress withoutScope(InetAddress address) {
        try {
            return InetAddress.getByAddress(address.getAddress());
        } catch (java.net.UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }
}
