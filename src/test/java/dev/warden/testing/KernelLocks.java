package dev.warden.testing;

import dev.warden.lock.NativePosix;
import java.nio.file.Files;
import java.nio.file.Path;

/** What the kernel's lock table says about waiters: how a test knows a process is blocked in flock. */
public final class KernelLocks {

    private KernelLocks() {
    }

    /** Processes blocked waiting for any flock or POSIX lock ("->" lines in /proc/locks). */
    public static long blockedWaiters() {
        return count(null);
    }

    /** Processes blocked waiting for a lock on the file now at {@code file}. */
    public static long blockedWaiters(Path file) {
        try {
            return count(":" + new NativePosix().stat(file.toString()).inode() + " ");
        } catch (Exception e) {
            return 0;
        }
    }

    private static long count(String inodeField) {
        try {
            return Files.readAllLines(Path.of("/proc/locks")).stream()
                    .filter(l -> l.contains("->") && (inodeField == null || l.contains(inodeField))).count();
        } catch (Exception e) {
            return 0;
        }
    }
}
