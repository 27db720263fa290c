package dev.warden.lock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How warden makes its switch socket its UID's alone: by name, never through a link another process of the UID swapped
 * in for it between the bind and the chmod (it would change the mode of whatever the link names).
 */
class ChmodAtTest {

    private final Posix posix = new NativePosix();

    @TempDir
    Path dir;

    @Test
    void aFileAtTheNameIsMadeTheOwnersAlone() throws Exception {
        Path file = Files.writeString(dir.resolve("switch.sock"), "");
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-rw-rw-"));
        posix.chmodAt(Posix.AT_FDCWD, file.toString(), 0600);
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
    }

    @Test
    void aLinkAtTheNameIsNeverFollowed() throws Exception {
        Path target = Files.writeString(dir.resolve("lilbee-data"), "");
        Files.setPosixFilePermissions(target, PosixFilePermissions.fromString("rw-r--r--"));
        Path link = Files.createSymbolicLink(dir.resolve("switch.sock"), target);
        Posix.ErrnoException refused = assertThrows(Posix.ErrnoException.class,
                () -> posix.chmodAt(Posix.AT_FDCWD, link.toString(), 0600));
        // glibc refuses the link (EOPNOTSUPP, as an older one refuses any file), and warden's own check then names it.
        assertEquals(Errno.ELOOP, refused.errno(), refused.getMessage());
        assertEquals("rw-r--r--", PosixFilePermissions.toString(Files.getPosixFilePermissions(target, LinkOption.NOFOLLOW_LINKS)));
    }
}
