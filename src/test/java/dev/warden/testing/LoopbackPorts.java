package dev.warden.testing;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Loopback ports for the processes tests start, below the kernel's ephemeral range. A port the kernel
 * picks (a bind to port 0) comes from the range it also gives every outgoing connection its source port
 * from, and one of those (a warden's to the API server, a probe's) took a test's port between its
 * choice and warden's bind ("Port 43409 seems to be in use"). Below the range only a bind takes a
 * port; handing them out in turn keeps two choices of this JVM apart.
 */
final class LoopbackPorts {

    private static final int LOWEST = 10_000;
    private static final int HIGHEST = ephemeralLow() - 1;
    /** One cursor for the JVM: ports are a machine-wide resource, and two tests' choices must differ. */
    private static final AtomicInteger NEXT = new AtomicInteger(-1);

    private LoopbackPorts() {
    }

    /** A port nothing listens on now, bound and let go to make sure. */
    public static int next() throws IOException {
        if (HIGHEST - LOWEST < 1000) {
            return kernelsChoice();
        }
        int span = HIGHEST - LOWEST + 1;
        NEXT.compareAndSet(-1, ThreadLocalRandom.current().nextInt(span));
        for (int tried = 0; tried < 200; tried++) {
            int port = LOWEST + Math.floorMod(NEXT.getAndIncrement(), span);
            try (ServerSocket socket = new ServerSocket()) {
                socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1);
                return port;
            } catch (IOException taken) {
                // Someone listens there: the next one.
            }
        }
        return kernelsChoice();
    }

    private static int kernelsChoice() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    /** The low end of {@code net.ipv4.ip_local_port_range} (Linux's default 32768 where it cannot be read). */
    private static int ephemeralLow() {
        try {
            // Line by line: Files.readString of this sysctl file returns its first byte alone (JDK 25, seen).
            return Integer.parseInt(Files.readAllLines(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).getFirst()
                    .trim().split("\\s+")[0]);
        } catch (IOException | RuntimeException e) {
            return 32768;
        }
    }
}
