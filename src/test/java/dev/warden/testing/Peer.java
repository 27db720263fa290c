package dev.warden.testing;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A lock peer that is not Java: util-linux {@code flock(1)} or Python's {@code fcntl.flock},
 * run as a real separate process. Each test closes its peers, which kills them by pid.
 */
public final class Peer implements AutoCloseable {

    private final Process process;
    private final BufferedReader stdout;

    private Peer(List<String> command) throws IOException {
        process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        stdout = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    }

    /**
     * {@code flock -F path sh -c 'echo locked; exec sleep 600'}: holds until killed, one pid. With
     * {@code more}, the same process holds each of those too (flock(1) nested with --no-fork execs).
     */
    public static Peer flockHolder(Path lockFile, Path... more) throws IOException {
        List<String> command = new ArrayList<>(List.of("flock", "--no-fork", lockFile.toString()));
        for (Path next : more) {
            command.addAll(List.of("flock", "--no-fork", next.toString()));
        }
        command.addAll(List.of("sh", "-c", "echo locked; exec sleep 600"));
        return locked(command, Duration.ofSeconds(10));
    }

    /**
     * Python holding a lock of {@code kind} on the file, opened read-only as a neighbour that may only read it
     * would: {@code posix-read} (fcntl F_SETLK, as {@code lockf}), {@code ofd-read} (F_OFD_SETLK),
     * {@code flock-shared}, or {@code flock-exclusive} (opened for writing and created, as filelock does).
     * Prints "locked" once it holds; {@code moreArgv} only shows on its command line (a decoy's name).
     */
    public static Peer pythonLock(Path lockFile, String kind, String... moreArgv) throws IOException {
        assumePython();
        String script = String.join("\n",
                "import fcntl, os, struct, sys",
                "p, kind = sys.argv[1], sys.argv[2]",
                "fd = os.open(p, (os.O_RDWR | os.O_CREAT if kind == 'flock-exclusive' else os.O_RDONLY) | os.O_NOFOLLOW, 0o666)",
                "if kind == 'posix-read': fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)",
                "elif kind == 'ofd-read': fcntl.fcntl(fd, 37, struct.pack('hhqqi4x', fcntl.F_RDLCK, 0, 0, 0, 0))",
                "elif kind == 'flock-shared': fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)",
                "elif kind == 'flock-exclusive': fcntl.flock(fd, fcntl.LOCK_EX)",
                "else: sys.exit('unknown lock kind ' + kind)",
                "print('locked', flush=True)",
                "sys.stdin.read()");
        List<String> command = new ArrayList<>(List.of("python3", "-c", script, lockFile.toString(), kind));
        command.addAll(List.of(moreArgv));
        return locked(command, Duration.ofSeconds(10));
    }

    /**
     * A neighbour flooding the kernel's lock table: Python holding {@code count} POSIX locks on files of its
     * own in {@code dir} (500 a file, every other byte so none merge: the kernel scans a file's locks at each
     * new one), each a line of {@code /proc/locks}. Prints "locked".
     */
    public static Peer lockFlood(Path dir, int count) throws IOException {
        assumePython();
        Files.createDirectories(dir);
        String script = String.join("\n",
                "import fcntl, os, resource, sys",
                "d, n, per = sys.argv[1], int(sys.argv[2]), 500",
                "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)",
                "resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))",
                "for f in range((n + per - 1) // per):",
                "    fd = os.open(os.path.join(d, str(f)), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)",
                "    for i in range(min(per, n - f * per)): fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 2 * i)",
                "print('locked', flush=True)",
                "sys.stdin.read()");
        return locked(List.of("python3", "-c", script, dir.toString(), Integer.toString(count)), Duration.ofSeconds(120));
    }

    /** Starts {@code command} and waits until it prints "locked"; one that does not is killed. */
    private static Peer locked(List<String> command, Duration patience) throws IOException {
        Peer peer = new Peer(command);
        try {
            peer.awaitLine("locked", patience);
        } catch (AssertionError e) {
            peer.process.destroyForcibly();
            throw e;
        }
        return peer;
    }

    /**
     * Python holding {@code fcntl.flock(LOCK_EX)} (blocking) on the file, opened as filelock opens
     * it. Prints "locked" once it holds, then runs {@code then} (Python statements) and holds until
     * killed or stdin closes. {@code moreArgv} only shows on its command line (a stand-in's name).
     */
    public static Peer pythonHolder(Path lockFile, String then, String... moreArgv) throws IOException {
        assumePython();
        String script = String.join("\n",
                "import fcntl, os, sys",
                "p = sys.argv[1]",
                "fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)",
                "fcntl.flock(fd, fcntl.LOCK_EX)",
                "print('locked', flush=True)",
                then,
                "sys.stdin.read()");
        List<String> command = new ArrayList<>(List.of("python3", "-c", script, lockFile.toString()));
        command.addAll(List.of(moreArgv));
        return new Peer(command);
    }

    /**
     * The real filelock package (installed by .ci/run into a virtualenv; its python named by the
     * {@code warden.interop.python} property) as a lock peer: see {@code interop/filelock_peer.py}.
     */
    public static Peer filelock(String kind, Path path, double timeoutSeconds) throws IOException {
        String python = System.getProperty("warden.interop.python", "");
        org.junit.jupiter.api.Assumptions.assumeFalse(python.isEmpty(),
                "no filelock: run with -Pinterop -Dinterop.python=<a python with filelock>, as .ci/run does");
        Path script = Path.of("src/test/resources/interop/filelock_peer.py").toAbsolutePath();
        return new Peer(List.of(python, script.toString(), kind, path.toString(), Double.toString(timeoutSeconds)));
    }

    /**
     * Real lilbee's engine-dir functions (installed by .ci/run into a virtualenv of its own, since
     * lilbee pins an older filelock; its python named by {@code warden.interop.lilbee-python}): see
     * {@code interop/lilbee_engine_peer.py}.
     */
    public static Peer lilbee(String command, Path engineDir, String... args) throws IOException {
        String python = LilbeeServe.command("python").toString();
        Path script = Path.of("src/test/resources/interop/lilbee_engine_peer.py").toAbsolutePath();
        List<String> argv = new ArrayList<>(List.of(python, script.toString(), command, engineDir.toString()));
        argv.addAll(List.of(args));
        return new Peer(argv);
    }

    /**
     * Python's stdlib sqlite3 running filelock's ReadWriteLock statements on {@code file}: {@code read}
     * ({@code BEGIN TRANSACTION; SELECT name FROM sqlite_schema LIMIT 1;}) or {@code write}
     * ({@code BEGIN EXCLUSIVE TRANSACTION;}) after {@code PRAGMA busy_timeout} and
     * {@code journal_mode=MEMORY}. Prints "trying", then "locked" (and holds until killed) or
     * "busy ..." and exits 7.
     */
    public static Peer pythonSqlite(Path file, String mode, long busyTimeoutMs) throws IOException {
        assumePython();
        String script = String.join("\n",
                "import sqlite3, sys",
                "con = sqlite3.connect(sys.argv[1], isolation_level=None)",
                "print('trying', flush=True)",
                "try:",
                "    con.execute('PRAGMA busy_timeout=%d;' % int(sys.argv[3]))",
                "    con.execute('PRAGMA journal_mode=MEMORY;')",
                "    if sys.argv[2] == 'read':",
                "        con.execute('BEGIN TRANSACTION;')",
                "        con.execute('SELECT name FROM sqlite_schema LIMIT 1;').fetchall()",
                "    else:",
                "        con.execute('BEGIN EXCLUSIVE TRANSACTION;')",
                "except sqlite3.OperationalError as e:",
                "    print('busy', e, flush=True)",
                "    sys.exit(7)",
                "print('locked', flush=True)",
                "sys.stdin.read()");
        return new Peer(List.of("python3", "-c", script, file.toString(), mode, Long.toString(busyTimeoutMs)));
    }

    /**
     * Python's http.server on {@code 127.0.0.1:port} answering every GET with {@code status} and a short
     * JSON body, as {@code lilbee serve} answers {@code /api/health} without its token (401). Prints
     * "listening" once it does.
     */
    public static Peer httpAnswering(int port, int status) throws IOException {
        assumePython();
        String script = String.join("\n",
                "import http.server, sys",
                "class H(http.server.BaseHTTPRequestHandler):",
                "    def do_GET(self):",
                "        body = b'{\"detail\":\"Missing or invalid bearer token\"}'",
                "        self.send_response(int(sys.argv[2]))",
                "        self.send_header('Content-Length', str(len(body)))",
                "        self.end_headers()",
                "        self.wfile.write(body)",
                "    def log_message(self, *args):",
                "        pass",
                "server = http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H)",
                "print('listening', flush=True)",
                "server.serve_forever()");
        Peer peer = new Peer(List.of("python3", "-c", script, Integer.toString(port), Integer.toString(status)));
        peer.awaitLine("listening", Duration.ofSeconds(10));
        return peer;
    }

    /** The sqlite3 command-line shell holding {@code BEGIN EXCLUSIVE} on {@code file} until killed. */
    public static Peer sqliteShellWriter(Path file) throws IOException {
        org.junit.jupiter.api.Assumptions.assumeTrue(new java.io.File("/usr/bin/sqlite3").canExecute()
                || commandExists("sqlite3"), "the sqlite3 shell is not installed");
        Peer peer = new Peer(List.of("sqlite3", file.toString()));
        var in = peer.process.getOutputStream();
        in.write("PRAGMA journal_mode=MEMORY;\nBEGIN EXCLUSIVE TRANSACTION;\n.print locked\n".getBytes());
        in.flush();
        peer.awaitLine("locked", Duration.ofSeconds(10));
        return peer;
    }

    private static boolean commandExists(String name) {
        try {
            return run(Duration.ofSeconds(10), "sh", "-c", "command -v " + name) == 0;
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }

    /**
     * Skips the calling test, saying why, where no python3 is installed: the default suite needs
     * only a JDK and util-linux, and .ci/run installs Python so CI always runs these.
     */
    public static void assumePython() {
        boolean found;
        try {
            found = run(Duration.ofSeconds(30), "python3", "-c", "import fcntl") == 0;
        } catch (IOException | InterruptedException | AssertionError e) {
            found = false;
        }
        if (!found) {
            System.err.println("SKIPPED: python3 with fcntl is not installed; the Python lock-peer test does not run");
        }
        org.junit.jupiter.api.Assumptions.assumeTrue(found, "python3 with fcntl is not installed");
    }

    /** Runs a short command and returns its exit code. */
    public static int run(Duration timeout, String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        p.getInputStream().transferTo(java.io.OutputStream.nullOutputStream());
        if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            p.destroyForcibly().waitFor();
            throw new AssertionError("timed out: " + String.join(" ", command));
        }
        return p.exitValue();
    }

    /** Whether {@code flock -n} can take the lock right now (it lets go at once). */
    public static boolean flockCanTake(Path lockFile) throws IOException, InterruptedException {
        return run(Duration.ofSeconds(10), "flock", "-n", lockFile.toString(), "true") == 0;
    }

    public long pid() {
        return process.pid();
    }

    public Process process() {
        return process;
    }

    /** Reads stdout until a line equal to {@code expected} arrives; fails on end of output or timeout. */
    public List<String> awaitLine(String expected, Duration timeout) throws IOException {
        List<String> seen = java.util.Collections.synchronizedList(new ArrayList<>());
        // Its own thread: the common pool has one worker on two cores, and a blocked read starves it.
        CompletableFuture<Boolean> found = new CompletableFuture<>();
        Thread.ofPlatform().daemon().start(() -> found.complete(readUntil(expected, seen)));
        boolean printed;
        try {
            printed = found.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            throw new AssertionError("peer did not print '" + expected + "' in " + timeout + ": " + seen, e);
        }
        if (!printed) {
            throw new AssertionError("peer ended before printing '" + expected + "': " + seen);
        }
        return seen;
    }

    private boolean readUntil(String expected, List<String> seen) {
        try {
            String line;
            while ((line = stdout.readLine()) != null) {
                seen.add(line);
                if (line.equals(expected)) {
                    return true;
                }
            }
            return false;
        } catch (IOException e) {
            return false;
        }
    }

    /** SIGKILL, and wait until the kernel has reaped it (so its locks are gone). */
    public void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
    }

    @Override
    public void close() throws InterruptedException {
        kill();
    }
}
