package dev.warden.control;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.lock.NativePosix;
import dev.warden.lock.Posix;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The control socket answers warden's own user, as the owner of the socket it bound says: it listens only in a
 * directory that is warden's own and no one else may write, where no one could have swapped that socket for theirs.
 * (Asking it to step down, from the CLI and with a real gate, is GateModeIT's.)
 */
class ControlSocketTest {

    private static final Posix POSIX = new NativePosix();

    @TempDir
    Path dir;

    @Test
    void aDirectoryOthersMayWriteIsRefusedNamingItAndTheFix() throws IOException {
        Path shared = Files.createDirectory(dir.resolve("shared"));
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxrwxrwx"));
        IOException refused = assertThrows(IOException.class,
                () -> ControlSocket.open(shared.resolve("control.sock"), null, POSIX));
        assertTrue(refused.getMessage().startsWith(shared + " is not a directory of warden's own"), refused.getMessage());
        assertTrue(refused.getMessage().contains("set warden.gate.control-socket"), refused.getMessage());
        assertFalse(Files.exists(shared.resolve("control.sock")));
    }

    @Test
    void aLinkToADirectoryIsRefused() throws IOException {
        Path real = Files.createDirectory(dir.resolve("real"));
        Files.setPosixFilePermissions(real, PosixFilePermissions.fromString("rwx------"));
        Path link = Files.createSymbolicLink(dir.resolve("link"), real);
        assertThrows(IOException.class, () -> ControlSocket.open(link.resolve("control.sock"), null, POSIX));
        assertFalse(Files.exists(real.resolve("control.sock")));
    }

    @Test
    void aDirectoryItMakesIsWardensAloneAndTheSocketGoesWithItsClose() throws IOException {
        Path socket = dir.resolve("warden/control.sock");
        try (ControlSocket control = ControlSocket.open(socket, null, POSIX)) {
            assertTrue(Files.exists(socket));
            assertTrue(PosixFilePermissions.toString(Files.getPosixFilePermissions(socket.getParent())).equals("rwx------"));
            assertTrue(PosixFilePermissions.toString(Files.getPosixFilePermissions(socket)).equals("rw-------"));
        }
        assertFalse(Files.exists(socket));
    }
}
