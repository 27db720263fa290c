package dev.warden.lock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.GatePod;
import dev.warden.testing.Peer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The kernel fact gate mode stands on: read from inside a PID namespace, {@code /proc/locks} lists a
 * lock only when its holder is visible in that namespace (with the namespace's pid for it). So a lock
 * that is held but not listed is held outside the pod. Checked with {@code unshare --pid --fork
 * --mount-proc}, as root, both ways.
 */
class ProcLocksNamespaceIT {

    @TempDir
    Path dir;

    /** {@code /proc/locks} as a process in a new PID namespace reads it, after {@code inside} (a shell line) runs there. */
    private static String locksSeenFromANewNamespace(String inside) throws Exception {
        Process process = new ProcessBuilder("unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "sh", "-c",
                inside + "; cat /proc/locks").redirectErrorStream(true).start();
        String out = new String(process.getInputStream().readAllBytes());
        assertTrue(process.waitFor(30, TimeUnit.SECONDS));
        assertEquals(0, process.exitValue(), out);
        return out;
    }

    private static String inode(Path file) throws Exception {
        return ":" + Files.getAttribute(file, "unix:ino") + " ";
    }

    @Test
    void aHolderOutsideTheNamespaceIsNotListedInsideIt() throws Exception {
        GatePod.assumeRoot();
        Path lock = Files.createFile(dir.resolve("server.lock"));
        try (Peer outside = Peer.flockHolder(lock)) {
            String host = Files.readString(Path.of("/proc/locks"));
            assertTrue(host.contains(inode(lock)), "the host lists the lock: " + host);
            String inside = locksSeenFromANewNamespace("true");
            assertFalse(inside.contains(inode(lock)), "listed inside although its holder is outside:\n" + inside);
        }
    }

    @Test
    void aHolderInsideTheNamespaceIsListedThereWithItsNamespacePid() throws Exception {
        GatePod.assumeRoot();
        Path lock = Files.createFile(dir.resolve("server.lock"));
        String inode = inode(lock);
        // PID 1 is sh; the holder it starts in the background is the namespace's pid 2. sh waits (at most
        // 5 s) until the lock shows, then the listing is read.
        String inside = locksSeenFromANewNamespace("flock " + lock + " sleep 30 & i=0; while ! grep -q '" + inode
                + "' /proc/locks && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done");
        List<String> lines = inside.lines().filter(l -> l.contains(inode)).toList();
        assertEquals(1, lines.size(), inside);
        assertEquals("2", lines.getFirst().trim().split("\\s+")[4], "the namespace's own pid: " + lines);
    }
}
