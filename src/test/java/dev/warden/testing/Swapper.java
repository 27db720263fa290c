package dev.warden.testing;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A neighbour on the shared volume as a separate process: swaps {@code dir/name} between a
 * regular file holding {@code content} and a FIFO, as fast as it can, until closed (killed by pid).
 * A reader that checks a name's type and then opens it by path loses this race sooner or later.
 */
public final class Swapper implements AutoCloseable {

    private static final String SCRIPT = String.join("\n",
            "import os, sys",
            "d, name, content = sys.argv[1], sys.argv[2], sys.argv[3]",
            "i = 0",
            "while True:",
            "    tmp = os.path.join(d, '.swap%d' % (i % 2))",
            "    try:",
            "        os.unlink(tmp)",
            "    except FileNotFoundError:",
            "        pass",
            "    if i % 2:",
            "        os.mkfifo(tmp)",
            "    else:",
            "        with open(tmp, 'w') as f:",
            "            f.write(content)",
            "    os.rename(tmp, os.path.join(d, name))",
            "    if i == 1:",
            "        print('swapping', flush=True)",
            "    i += 1");

    private final Process process;

    private Swapper(Process process) {
        this.process = process;
    }

    /** {@code mkfifo path}: a FIFO, which blocks whoever opens it to read until someone opens it to write. */
    public static void mkfifo(Path path) throws IOException, InterruptedException {
        Process mkfifo = new ProcessBuilder("mkfifo", path.toString()).inheritIO().start();
        if (mkfifo.waitFor() != 0) {
            throw new IOException("mkfifo " + path + " failed");
        }
    }

    /** Starts swapping, and returns once the name has been both a file and a FIFO. */
    public static Swapper start(Path dir, String name, String content) throws IOException {
        return start(List.of("python3"), dir, name, content);
    }

    /** The same, as another user (util-linux setpriv: needs root) with the system's Python. */
    public static Swapper startAs(int uid, Path dir, String name, String content) throws IOException {
        List<String> python = new ArrayList<>(Setpriv.as(uid, uid));
        python.add("/usr/bin/python3");
        return start(python, dir, name, content);
    }

    private static Swapper start(List<String> python, Path dir, String name, String content) throws IOException {
        List<String> command = new ArrayList<>(python);
        command.addAll(List.of("-c", SCRIPT, dir.toString(), name, content));
        Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String first = new java.io.BufferedReader(new java.io.InputStreamReader(process.getInputStream(),
                java.nio.charset.StandardCharsets.UTF_8)).readLine();
        if (!"swapping".equals(first)) {
            process.destroyForcibly();
            throw new IOException("the swapping neighbour did not start");
        }
        return new Swapper(process);
    }

    @Override
    public void close() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
    }
}
