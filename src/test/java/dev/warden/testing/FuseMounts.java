package dev.warden.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * Mounts of one directory through FUSE passthrough filesystems (Debian's bindfs, in the foreground: a process of the
 * test's with a real pid), as two pods on one ReadWriteMany volume see it where the filesystem keeps each mount's
 * flock(2) locks to itself: the same files, locks that do not meet. Unmounted (fusermount -u) and each bindfs waited for
 * on close. Needs root and /dev/fuse; .ci/run installs bindfs.
 */
public final class FuseMounts implements AutoCloseable {

    private final List<Path> points = new ArrayList<>();
    private final List<Process> daemons = new ArrayList<>();

    private FuseMounts() {
    }

    /** {@code count} mounts of {@code source} (created) beside it, named {@code <source>-mount-<i>}. */
    public static FuseMounts of(Path source, int count) throws IOException, InterruptedException {
        if (Peer.run(Duration.ofSeconds(10), "sh", "-c", "command -v bindfs && command -v fusermount") != 0) {
            String why = "no bindfs (or fusermount) to mount the volume twice through FUSE: install bindfs, as .ci/run does";
            System.err.println("SKIPPED: " + why);
            Assumptions.abort(why);
        }
        Files.createDirectories(source);
        FuseMounts mounts = new FuseMounts();
        try {
            for (int i = 0; i < count; i++) {
                Path point = Files.createDirectories(source.resolveSibling(source.getFileName() + "-mount-" + i));
                mounts.daemons.add(new ProcessBuilder("bindfs", "-f", source.toString(), point.toString())
                        .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start());
                mounts.points.add(point);
                Path mountinfo = Path.of("/proc/self/mountinfo");
                Await.until("bindfs mounts " + point, () -> {
                    try {
                        return Files.readString(mountinfo).contains(" " + point + " ");
                    } catch (IOException e) {
                        return false;
                    }
                });
            }
        } catch (IOException | RuntimeException e) {
            mounts.close();
            throw e;
        }
        return mounts;
    }

    public Path get(int i) {
        return points.get(i);
    }

    @Override
    public void close() throws InterruptedException {
        for (int i = 0; i < daemons.size(); i++) {
            try {
                new ProcessBuilder("fusermount", "-u", points.get(i).toString()).redirectErrorStream(true)
                        .redirectOutput(ProcessBuilder.Redirect.DISCARD).start().waitFor(10, TimeUnit.SECONDS);
            } catch (IOException e) {
                // the daemon is killed below either way, which ends its mount
            }
            Process daemon = daemons.get(i);
            if (!daemon.waitFor(10, TimeUnit.SECONDS)) {
                daemon.destroyForcibly();
                daemon.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }
}
