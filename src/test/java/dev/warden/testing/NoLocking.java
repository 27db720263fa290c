package dev.warden.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Assumptions;

/**
 * A filesystem that cannot lock, as the kernel shows it to a process: src/test/c/flock-enolck.c, which runs a command
 * on whose every flock(2) the kernel answers ENOLCK (a seccomp filter), as an NFS mount without its lock daemon does.
 * No filesystem here lacks locks, and none can be mounted by a test, so the kernel is made to say it; everything else
 * the command does is real. Compiled once per build with the machine's C compiler.
 */
public final class NoLocking {

    private static final Path SOURCE = Path.of("src", "test", "c", "flock-enolck.c").toAbsolutePath();
    private static final Path BINARY = Path.of("target", "flock-enolck").toAbsolutePath();

    private NoLocking() {
    }

    /** The launcher's command prefix; stops the calling test, saying why, where no C compiler is found. */
    public static synchronized List<String> launcher() throws IOException, InterruptedException {
        if (!Files.isExecutable(BINARY)) {
            if (Peer.run(java.time.Duration.ofSeconds(10), "sh", "-c", "command -v cc") != 0) {
                String why = "no C compiler (cc) to build src/test/c/flock-enolck.c: install gcc, as .ci/run does";
                System.err.println("SKIPPED: " + why);
                Assumptions.abort(why);
            }
            Files.createDirectories(BINARY.getParent());
            Command.ok(null, List.of("cc", "-O2", "-o", BINARY.toString(), SOURCE.toString()));
        }
        return List.of(BINARY.toString());
    }
}
