package dev.warden.soak;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.WardenProcess;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A neighbour on the pod's loopback, replayed against the packaged warden with its shipped
 * settings (the rest of the hostile-neighbour reproductions are unit and integration tests of their
 * own: forged records, squatted ports, huge and trickled answers, a dying lock keeper).
 */
class NeighbourSoak {

    @TempDir
    Path dir;

    /** Idle connections opened and left: let go after the idle timeout, and the probes answer throughout. */
    @Test
    void idleConnectionsAreLetGoAndTheProbesAnswerMeanwhile() throws Exception {
        try (WardenProcess warden = WardenProcess.serve("idle-connections", "--data-root", dir.resolve("root").toString(),
                "--engine-dir", dir.resolve("engine").toString())) {
            warden.awaitStatus("/q/health/ready", 200);
            List<Socket> idle = new ArrayList<>();
            try {
                // on both ports: the API's and the management interface's (probes, metrics)
                for (int i = 0; i < 100; i++) {
                    idle.add(new Socket(InetAddress.getLoopbackAddress(), warden.port()));
                    idle.add(new Socket(InetAddress.getLoopbackAddress(), warden.managementPort()));
                }
                assertEquals(200, warden.status("/q/health/ready"), "200 idle sockets do not silence the probes");
                long opened = System.nanoTime();
                for (Socket socket : idle.subList(0, 2)) {
                    // Far above the 75 s idle timeout, only so that a broken build fails rather than hangs.
                    socket.setSoTimeout((int) Duration.ofSeconds(150).toMillis());
                    InputStream in = socket.getInputStream();
                    int read;
                    try {
                        read = in.read();
                    } catch (SocketTimeoutException e) {
                        read = -2;
                    }
                    assertEquals(-1, read, "warden closes a connection that stays idle, port " + socket.getPort());
                }
                Duration held = Duration.ofNanos(System.nanoTime() - opened);
                assertTrue(held.compareTo(Duration.ofMinutes(2)) < 0, "closed after " + held.toSeconds() + " s");
            } finally {
                for (Socket socket : idle) {
                    socket.close();
                }
            }
            // A fresh connection: the test's own pooled one may have been closed as idle too.
            warden.awaitStatus("/q/health/ready", 200);
        }
    }
}
