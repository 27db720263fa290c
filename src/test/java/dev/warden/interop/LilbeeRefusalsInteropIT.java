package dev.warden.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.warden.library.LibraryLocks;
import dev.warden.library.LibraryUnlockableException;
import dev.warden.library.ResetRefusedException;
import dev.warden.lock.FileLocker;
import dev.warden.lock.NativePosix;
import dev.warden.lock.SyncMark;
import dev.warden.testing.Command;
import dev.warden.testing.InteropTools;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A data root that cannot lock, refused by warden in the real lilbee's words (lilbee 0.6.90b449's lock.py, whose text is
 * the contract a person reads): a reset that cannot tell whether a sync runs, and a sync that cannot mark itself, with
 * the advice lilbee chooses by the errno. Each case is made on disk, then put to lilbee's own functions and to warden's
 * LibraryLocks, and the two sentences compared byte for byte. The read-only and full filesystems are real mounts (a
 * read-only bind mount, a tmpfs out of inodes: root, as .ci/run runs), unmounted after.
 */
class LilbeeRefusalsInteropIT {

    /** lilbee's reset and its sync's refusal, on the data root given, one line each: {@code reset\t<message or ok>}. */
    private static final String LILBEE = """
            import sys
            from pathlib import Path
            from lilbee.runtime import lock
            root = Path(sys.argv[1])
            def reset():
                with lock._no_sync_running(root):
                    pass
            for name, attempt in (("reset", reset), ("sync", lambda: lock.refuse_where_a_sync_cannot_lock(root))):
                try:
                    attempt()
                    print(name + "\\tok")
                except Exception as e:
                    print(name + "\\t" + str(e))
            """;

    @TempDir
    Path dir;

    private final LibraryLocks warden = new LibraryLocks(new FileLocker(new NativePosix()), new SyncMark());

    @Test
    void aSyncLockThatIsNotADatabase() throws Exception {
        Path root = Files.createDirectories(dir.resolve("root"));
        Files.writeString(root.resolve("sync.lock"), "a note someone left here, not a database ".repeat(40));
        assertSameWords(root);
    }

    @Test
    void aSyncLockThatIsALink() throws Exception {
        Path root = Files.createDirectories(dir.resolve("root"));
        Files.createSymbolicLink(root.resolve("sync.lock"), dir.resolve("elsewhere.db"));
        assertSameWords(root);
    }

    @Test
    void aDataRootUnderAFile() throws Exception {
        assertSameWords(Files.writeString(dir.resolve("a-file"), "").resolve("root"));
    }

    @Test
    void aDataRootOnAReadOnlyMount() throws Exception {
        Path root = Files.createDirectories(dir.resolve("root"));
        Command.ok(null, List.of("mount", "--bind", root.toString(), root.toString()));
        try {
            Command.ok(null, List.of("mount", "-o", "remount,ro,bind", root.toString()));
            Map<String, String> words = assertSameWords(root);
            assertEquals("Cannot change the library: " + root + " cannot be locked ([Errno 30] Read-only file system). Make "
                    + root + " writable, then try again.", words.get("sync"));
        } finally {
            Command.ok(null, List.of("umount", root.toString()));
        }
    }

    @Test
    void aDataRootOnAFilesystemOutOfInodes() throws Exception {
        Path mount = Files.createDirectories(dir.resolve("full"));
        Command.ok(null, List.of("mount", "-t", "tmpfs", "-o", "size=4m,nr_inodes=16", "tmpfs", mount.toString()));
        try {
            Path root = Files.createDirectories(mount.resolve("root"));
            for (int i = 0; ; i++) {
                try {
                    Files.createFile(mount.resolve("filler-" + i));
                } catch (IOException e) {
                    break;
                }
            }
            Map<String, String> words = assertSameWords(root);
            assertEquals("Cannot change the library: " + root + " cannot be locked ([Errno 28] No space left on device)."
                    + " Free some disk space, then try again.", words.get("sync"));
        } finally {
            Command.ok(null, List.of("umount", mount.toString()));
        }
    }

    /** lilbee's words and warden's for a reset and a sync on {@code root}, the same; both refused. */
    private Map<String, String> assertSameWords(Path root) throws Exception {
        String out = Command.ok(null, List.of(InteropTools.path("lilbee-python"), "-c", LILBEE, root.toString()));
        Map<String, String> lilbee = out.lines().filter(l -> l.contains("\t"))
                .collect(Collectors.toMap(l -> l.substring(0, l.indexOf('\t')), l -> l.substring(l.indexOf('\t') + 1)));
        String reset = assertThrows(ResetRefusedException.class, () -> warden.noSyncRunning(root)).getMessage();
        String sync = assertThrows(LibraryUnlockableException.class, () -> warden.syncRunning(root, Duration.ofSeconds(1)))
                .getMessage();
        assertEquals(lilbee.get("reset"), reset, "a reset refused");
        assertEquals(lilbee.get("sync"), sync, "a sync refused");
        return lilbee;
    }
}
