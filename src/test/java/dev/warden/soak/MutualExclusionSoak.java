package dev.warden.soak;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.warden.testing.Peer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Mutual exclusion under contention: two warden-side Java processes and two Python processes
 * each increment a shared counter under the data-dir lock. Not one update may be lost, also when
 * the Python peers unlink the lock file on release as filelock 3.21 to 3.29 did: that is what
 * warden's inode check is for. Bounded: 10,000 increments in all per run.
 */
class MutualExclusionSoak {

    private static final int PER_WORKER = Integer.getInteger("warden.soak.increments", 2500);

    @TempDir
    Path dir;

    /** fcntl.flock like filelock; after each win the inode is checked as current filelock does. */
    private static final String PYTHON_WORKER = String.join("\n",
            "import fcntl, os, sys",
            "lock, counter, n, unlink = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == 'unlink'",
            "done = 0",
            "while done < n:",
            "    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)",
            "    fcntl.flock(fd, fcntl.LOCK_EX)",
            "    try:",
            "        st = os.stat(lock)",
            "    except FileNotFoundError:",
            "        st = None",
            "    if st is None or (st.st_dev, st.st_ino) != (os.fstat(fd).st_dev, os.fstat(fd).st_ino):",
            "        os.close(fd)",
            "        continue",
            "    with open(counter) as f:",
            "        value = int(f.read().strip())",
            "    with open(counter, 'w') as f:",
            "        f.write(str(value + 1))",
            "    done += 1",
            "    if unlink:",
            "        os.unlink(lock)",
            "    os.close(fd)",
            "print('done', flush=True)");

    @ParameterizedTest
    @ValueSource(strings = {"keep", "unlink"})
    void noIncrementIsLost(String pythonRelease) throws Exception {
        Peer.assumePython();
        Path lock = dir.resolve("server.lock");
        Path counter = Files.writeString(dir.resolve("counter"), "0");
        List<Process> workers = new ArrayList<>();
        String java = ProcessHandle.current().info().command().orElse("java");
        for (int i = 0; i < 2; i++) {
            workers.add(new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                    "dev.warden.testing.CounterWorker", lock.toString(), counter.toString(), Integer.toString(PER_WORKER))
                    .redirectErrorStream(true).start());
            workers.add(new ProcessBuilder("python3", "-c", PYTHON_WORKER, lock.toString(), counter.toString(),
                    Integer.toString(PER_WORKER), pythonRelease).redirectErrorStream(true).start());
        }
        try {
            for (Process worker : workers) {
                String out = new String(worker.getInputStream().readAllBytes());
                if (!worker.waitFor(5, TimeUnit.MINUTES) || worker.exitValue() != 0) {
                    throw new AssertionError("a worker failed: " + out);
                }
                System.out.println(worker.info().command().orElse("?") + ": " + out.trim());
            }
        } finally {
            workers.forEach(Process::destroyForcibly);
        }
        assertEquals(4 * PER_WORKER, Long.parseLong(Files.readString(counter).trim()), "lost updates with " + pythonRelease);
    }
}
