package dev.warden.testing;

import dev.warden.lock.NativePosix;
import dev.warden.lock.Posix;
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
            return count(":" + NativePosix.shared().statAt(Posix.AT_FDCWD, file.toString()).id().inode() + " ");
        } catch (Exception e) {
            return 0;
        }
    }

    /** The pids holding (not waiting for) a flock on the file now at {@code file}. */
    public static java.util.Set<Long> flockHolders(Path file) {
        try {
            String inode = ":" + NativePosix.shared().statAt(Posix.AT_FDCWD, file.toString()).id().inode() + " ";
            java.util.Set<Long> pids = new java.util.HashSet<>();
            for (String line : Files.readAllLines(Path.of("/proc/locks"))) {
                String[] fields = line.trim().split("\\s+");
                if (!line.contains("->") && line.contains(" FLOCK ") && line.contains(inode) && fields.length > 4) {
                    pids.add(Long.parseLong(fields[4]));
                }
            }
            return pids;
        } catch (Exception e) {
            return java.util.Set.of();
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
