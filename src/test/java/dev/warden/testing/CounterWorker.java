package dev.warden.testing;

import dev.warden.lock.FileLocker;
import dev.warden.lock.HeldLock;
import dev.warden.lock.NativePosix;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A warden-side contender for the mutual-exclusion soak, run as its own process: N times, take the
 * lock with warden's FileLocker (blocking), read the counter, write it plus one, let go.
 * Arguments: LOCK COUNTER N.
 */
public final class CounterWorker {

    public static void main(String[] args) throws Exception {
        Path lock = Path.of(args[0]);
        Path counter = Path.of(args[1]);
        int n = Integer.parseInt(args[2]);
        FileLocker locker = new FileLocker(new NativePosix());
        for (int i = 0; i < n; i++) {
            try (HeldLock held = locker.lock(lock)) {
                long value = Long.parseLong(Files.readString(counter).trim());
                Files.writeString(counter, Long.toString(value + 1));
            }
        }
        System.out.println("done " + locker.replacedFileRetries());
    }
}
