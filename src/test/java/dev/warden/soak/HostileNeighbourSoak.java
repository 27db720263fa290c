package dev.warden.soak;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.warden.lock.FileLocker;
import dev.warden.testing.Await;
import dev.warden.testing.FakeEngine;
import dev.warden.testing.KernelLocks;
import dev.warden.testing.Setpriv;
import dev.warden.testing.Swapper;
import dev.warden.testing.WardenProcess;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The hostile-neighbour reproductions replayed against the packaged jar, with warden running as
 * UID 1001 and the neighbour as UID 1002, as on a shared volume: the neighbour's group may write the
 * volume's directories (as an {@code fsGroup} makes them), and nothing else of warden's. After each,
 * nothing outside the volume may have changed. Needs root for setpriv and chown (CI runs as root).
 */
class HostileNeighbourSoak {

    private static final int WARDEN = 1001;
    private static final int NEIGHBOUR = 1002;
    private static final String SECRET = "s3cr3t-t0ken-xyz";

    @TempDir
    Path dir;

    private Path volume;
    private Path outside;
    private Map<String, String> outsideBefore;
    private final List<Process> neighbours = new ArrayList<>();
    private final List<Long> bystanders = new ArrayList<>();

    @BeforeEach
    void aVolumeTheNeighbourCanWriteAndFilesOutsideItThatOnlyWardenCan() throws Exception {
        Assumptions.assumeTrue("0".equals(FileLocker.currentUid()),
                "SKIPPED: replaying as two UIDs needs root (CI runs as root)");
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        volume = dir.resolve("volume");
        for (String sub : List.of("", "root", "root/data", "scope", "engine", "engine/engine-users")) {
            Path d = Files.createDirectories(volume.resolve(sub));
            own(d, WARDEN, NEIGHBOUR);
            // setgid and group-writable: what an fsGroup gives every container of the pod
            Files.setAttribute(d, "unix:mode", 02775);
        }
        outside = Files.createDirectory(dir.resolve("outside"));
        own(outside, WARDEN, WARDEN);
        Files.setAttribute(outside, "unix:mode", 0755);
        for (Map.Entry<String, String> file : Map.of("precious", "precious", "token", SECRET, "dead.lock", "",
                "x.keep-warm", "", "engine-key", "engine-k3y").entrySet()) {
            Path f = Files.writeString(outside.resolve(file.getKey()), file.getValue());
            own(f, WARDEN, WARDEN);
            Files.setAttribute(f, "unix:mode", 0600);
        }
        outsideBefore = snapshot(outside);
    }

    @AfterEach
    void nothingOutsideTheVolumeChanged() throws Exception {
        for (Process neighbour : neighbours) {
            neighbour.destroyForcibly();
            neighbour.waitFor(10, TimeUnit.SECONDS);
        }
        for (long pid : bystanders) {
            ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
        }
        if (outsideBefore != null) {
            assertEquals(outsideBefore, snapshot(outside), "nothing outside the volume changed");
        }
    }

    private WardenProcess warden(String name, List<String> settings) throws IOException {
        return WardenProcess.serveAs(WARDEN, WARDEN, dir.resolve("app"), name, settings,
                "--data-root", volume.resolve("root").toString(), "--scope", volume.resolve("scope").toString(),
                "--engine-dir", volume.resolve("engine").toString());
    }

    /** Finding 1: links planted at the owner file's temporary names while the scope lock is deleted again and again. */
    @Test
    void theOwnerFileIsNeverWrittenThroughAPlantedLink() throws Exception {
        try (WardenProcess warden = warden("neighbour-owner", List.of())) {
            warden.awaitStatus("/q/health/ready", 200);
            neighbour("""
                    import os, sys, time
                    scope, target, pid = sys.argv[1], sys.argv[2], sys.argv[3]
                    for i in range(200):
                        for name in ('.server.scope.owner.json.%s.tmp' % pid, 'server.scope.owner.json'):
                            p = os.path.join(scope, name)
                            try:
                                os.unlink(p)
                            except OSError:
                                pass
                            try:
                                os.symlink(target, p)
                            except OSError:
                                pass
                        try:
                            os.unlink(os.path.join(scope, 'server.scope.lock'))
                        except OSError:
                            pass
                        time.sleep(0.02)
                    print('done', flush=True)
                    """, volume.resolve("scope").toString(), outside.resolve("precious").toString(),
                    Long.toString(warden.pid())).waitFor(60, TimeUnit.SECONDS);
            warden.awaitStatus("/q/health/ready", 200);
            assertEquals(200, warden.status("/q/health/live"));
        }
    }

    /** Finding 6: the neighbour holds the scope lock and leaves a huge owner file: the standby still takes over. */
    @Test
    void aHugeOwnerFileLeftByTheScopeHolderDoesNotStopTheTakeover() throws Exception {
        Process holder = neighbour("""
                import fcntl, os, sys
                scope = sys.argv[1]
                os.umask(0)
                fd = os.open(os.path.join(scope, 'server.scope.lock'), os.O_RDWR | os.O_CREAT, 0o666)
                fcntl.flock(fd, fcntl.LOCK_EX)
                with open(os.path.join(scope, 'server.scope.owner.json'), 'w') as f:
                    f.write('{"data_dir": "' + 'x' * (64 * 1024 * 1024) + '"}')
                print('holding', flush=True)
                sys.stdin.read()
                """, volume.resolve("scope").toString());
        assertEquals("holding", firstLine(holder));
        try (WardenProcess warden = warden("neighbour-owner-huge", List.of())) {
            warden.awaitLockData("scope.state", "held-elsewhere");
            assertEquals(200, warden.status("/q/health/live"));
            holder.destroyForcibly();
            warden.awaitStatus("/q/health/ready", 200);
            assertEquals(200, warden.status("/q/health/live"));
        }
    }

    /** Finding 2: a record swapped for a link to a file only warden can read, in a loop, while status is asked. */
    @Test
    void aRecordSwappedForALinkNeverLeaksWhatItPointsAt() throws Exception {
        try (WardenProcess warden = warden("neighbour-leak", List.of())) {
            warden.awaitReaper();
            neighbour("""
                    import os, sys
                    d, target = sys.argv[1], sys.argv[2]
                    p = os.path.join(d, 'llama-swap.state.x.1.json')
                    while True:
                        for make in (lambda t: os.symlink(target, t), lambda t: open(t, 'w').write('{')):
                            t = os.path.join(d, '.swap')
                            try:
                                os.unlink(t)
                            except OSError:
                                pass
                            make(t)
                            os.rename(t, p)
                    """, volume.resolve("engine").toString(), outside.resolve("token").toString());
            for (int i = 0; i < 300; i++) {
                String status = warden.text("/api/v1/status");
                assertFalse(status.contains("s3cr3t"), status);
            }
            assertFalse(warden.log().contains("s3cr3t"), "the log quotes nothing");
        }
    }

    /** Finding 3: a neighbour's listener named by a forged record is never sent the engine's key. */
    @Test
    void theEngineKeyNeverGoesToANeighboursPort() throws Exception {
        try (WardenProcess warden = warden("neighbour-key", List.of("-Dwarden.engine.api-key-file=" + outside.resolve("engine-key")))) {
            warden.awaitReaper();
            Process squatter = neighbour("""
                    import http.server, json, os, sys, time
                    d = sys.argv[1]
                    class H(http.server.BaseHTTPRequestHandler):
                        def do_GET(self):
                            print('auth %s' % self.headers.get('Authorization'), flush=True)
                            self.send_response(200); self.end_headers(); self.wfile.write(b'{"running": []}')
                        do_POST = do_GET
                        def log_message(self, *a):
                            pass
                    s = http.server.HTTPServer(('127.0.0.1', 0), H)
                    port = s.server_address[1]
                    record = {'pid': os.getpid(), 'pgid': os.getpgid(0), 'created_at': time.time() - 1, 'name': 'llama-swap',
                              'member_ports': [], 'proxy_port': port}
                    open(os.path.join(d, '.r'), 'w').write(json.dumps(record))
                    os.rename(os.path.join(d, '.r'), os.path.join(d, 'llama-swap.state.x.%d.json' % os.getpid()))
                    print('listening', flush=True)
                    s.serve_forever()
                    """, volume.resolve("engine").toString());
            BufferedReader out = new BufferedReader(new InputStreamReader(squatter.getInputStream(), StandardCharsets.UTF_8));
            assertEquals("listening", out.readLine());
            List<String> seen = new ArrayList<>();
            Thread reader = Thread.ofPlatform().daemon().start(() -> {
                try {
                    for (String line; (line = out.readLine()) != null; ) {
                        seen.add(line);
                    }
                } catch (IOException e) {
                    // the squatter was killed
                }
            });
            for (int i = 0; i < 20; i++) {
                warden.text("/api/v1/status");
            }
            awaitPasses(warden, 5);
            squatter.destroyForcibly();
            reader.join(10_000);
            for (String line : seen) {
                assertFalse(line.contains("engine-k3y"), "the key went to a neighbour: " + line);
            }
        }
    }

    /** Finding 5: a record and a marker swapped for FIFOs in a loop block no pass, and SIGTERM still stops warden. */
    @Test
    void fifosSwappedInBlockNothingAndSigtermStillStopsWarden() throws Exception {
        try (WardenProcess warden = warden("neighbour-fifo", List.of())) {
            warden.awaitReaper();
            try (Swapper record = Swapper.startAs(NEIGHBOUR, volume.resolve("engine"), "llama-swap.state.x.7.json", "{\"pid\": 7}");
                    Swapper marker = Swapper.startAs(NEIGHBOUR, volume.resolve("engine/engine-users"), "n.keep-warm", "5")) {
                awaitPasses(warden, 10);
                assertEquals(200, warden.status("/q/health/live"));
                assertEquals(0, warden.terminate(), "SIGTERM stops warden: " + warden.log());
            }
        }
    }

    /** Finding 7: engine-users/ swapped for a link to a dir of warden's: no dead user's file is deleted there. */
    @Test
    void aUsersDirSwappedForALinkDeletesNothingItPointsAt() throws Exception {
        try (WardenProcess warden = warden("neighbour-users", List.of())) {
            warden.awaitReaper();
            neighbour("""
                    import os, shutil, sys
                    d, target = sys.argv[1], sys.argv[2]
                    shutil.rmtree(os.path.join(d, 'engine-users'))
                    os.symlink(target, os.path.join(d, 'engine-users'))
                    print('swapped', flush=True)
                    """, volume.resolve("engine").toString(), outside.toString()).waitFor(30, TimeUnit.SECONDS);
            assertTrue(Files.isSymbolicLink(volume.resolve("engine/engine-users")));
            awaitPasses(warden, 5);
            assertTrue(Files.exists(outside.resolve("dead.lock")) && Files.exists(outside.resolve("x.keep-warm")));
        }
    }

    /**
     * Finding 4: a neighbour's listener, named by forged records, answers {@code /running} with a 256 MB
     * body and with one trickled a byte a second, while status is asked from eight threads at once: in a
     * 64 MB heap, every status call answers within the client's 5 s, and the probes and passes go on.
     */
    @Test
    void hugeAndTrickledAnswersWedgeNothing() throws Exception {
        try (WardenProcess warden = warden("neighbour-answers", List.of("-Xmx64m"))) {
            warden.awaitReaper();
            Process squatter = neighbour("""
                    import fcntl, http.server, json, os, sys, threading, time
                    d = sys.argv[1]
                    os.umask(0)
                    # a live user, so the records stay for status to look at
                    user = os.open(os.path.join(d, 'engine-users', 'squatter.lock'), os.O_RDWR | os.O_CREAT, 0o666)
                    fcntl.flock(user, fcntl.LOCK_EX)
                    class H(http.server.BaseHTTPRequestHandler):
                        def do_GET(self):
                            self.send_response(200)
                            self.end_headers()
                            try:
                                if self.server.kind == 'huge':
                                    self.wfile.write(b'{"running": [')
                                    for _ in range(4096):
                                        self.wfile.write(b' ' * 65536)
                                else:
                                    for _ in range(600):
                                        self.wfile.write(b' ')
                                        self.wfile.flush()
                                        time.sleep(1)
                            except OSError:
                                pass
                        def log_message(self, *a):
                            pass
                    for kind in ('huge', 'trickle'):
                        s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)
                        s.kind, s.daemon_threads = kind, True
                        threading.Thread(target=s.serve_forever, daemon=True).start()
                        record = {'pid': os.getpid(), 'pgid': os.getpgid(0), 'created_at': time.time() - 1, 'name': 'llama-swap',
                                  'member_ports': [], 'proxy_port': s.server_address[1]}
                        open(os.path.join(d, '.r'), 'w').write(json.dumps(record))
                        os.rename(os.path.join(d, '.r'), os.path.join(d, 'llama-swap.state.%s.%d.json' % (kind, os.getpid())))
                    print('serving', flush=True)
                    threading.Event().wait()
                    """, volume.resolve("engine").toString());
            assertEquals("serving", firstLine(squatter));
            awaitPasses(warden, 3);
            List<Thread> askers = new ArrayList<>();
            List<String> failures = java.util.Collections.synchronizedList(new ArrayList<>());
            for (int t = 0; t < 8; t++) {
                askers.add(Thread.ofPlatform().start(() -> {
                    for (int i = 0; i < 5; i++) {
                        try {
                            // the client's own 5 s timeout fails a call that hangs
                            if (!warden.json("/api/v1/status").path("engines").isArray()) {
                                failures.add("no engines in the status");
                            }
                        } catch (IOException e) {
                            failures.add(e.toString());
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                }));
            }
            while (askers.stream().anyMatch(Thread::isAlive)) {
                assertEquals(200, warden.status("/q/health/live"), "liveness answers while status waits on the neighbour");
                Thread.sleep(200);
            }
            assertEquals(List.of(), failures);
            JsonNode records = warden.json("/api/v1/status").at("/engines/0/records");
            assertEquals(2, records.size(), "status asked both of the neighbour's listeners: " + records);
            records.forEach(r -> assertFalse(r.path("answers").asBoolean(), r.toString()));
            awaitPasses(warden, 3);
            assertTrue(warden.process().isAlive());
            assertFalse(warden.log().contains("OutOfMemoryError"), warden.log());
        }
    }

    /**
     * Finding 8: records forged by the neighbour name processes of warden's own UID: a standalone
     * llama-server (a dead record's member port), a llama-swap-exporter, a llama-swap with no created_at,
     * and a llama-swap in another process's group, which passes every other check: its pid, start time and
     * argv are in /proc for anyone. The neighbour could signal none of them, so warden signals none on its
     * behalf (the records are the neighbour's, the processes warden's UID's); every process lives, and the
     * log says why each record was refused.
     */
    @Test
    void forgedRecordsOfAnotherUidKillNothing() throws Exception {
        try (WardenProcess warden = warden("neighbour-forged", List.of())) {
            warden.awaitReaper();
            int serverPort = FakeEngine.freePort();
            Seen server = asWarden(true, "llama-server", "--port", Integer.toString(serverPort)).getFirst();
            Seen exporter = asWarden(true, "llama-swap-exporter").getFirst();
            Seen undated = asWarden(true, "llama-swap").getFirst();
            List<Seen> family = asWarden(true, "leader");
            Seen leader = family.stream().filter(s -> s.name().equals("leader")).findFirst().orElseThrow();
            Seen member = family.stream().filter(s -> s.name().equals("llama-swap")).findFirst().orElseThrow();
            assertEquals(leader.pid(), member.pgid(), "the llama-swap is in the leader's group");
            Process gone = new ProcessBuilder("true").start();
            gone.waitFor();
            Map<String, String> records = Map.of(
                    "llama-swap.state.dead." + gone.pid() + ".json", record(gone.pid(), gone.pid(), server.createdAt() - 10, serverPort),
                    "llama-swap.state.exporter." + exporter.pid() + ".json", record(exporter.pid(), exporter.pid(), exporter.createdAt(), serverPort),
                    "llama-swap.state.undated." + undated.pid() + ".json", record(undated.pid(), undated.pid(), null, serverPort),
                    "llama-swap.state.member." + member.pid() + ".json", record(member.pid(), leader.pid(), member.createdAt(), serverPort));
            List<String> args = new ArrayList<>(List.of(volume.resolve("engine").toString()));
            records.forEach((name, json) -> args.addAll(List.of(name, json)));
            assertEquals(0, neighbour("""
                    import os, sys
                    d = sys.argv[1]
                    for name, content in zip(sys.argv[2::2], sys.argv[3::2]):
                        open(os.path.join(d, '.r'), 'w').write(content)
                        os.rename(os.path.join(d, '.r'), os.path.join(d, name))
                    """, args.toArray(String[]::new)).waitFor());
            Await.until("every forged record is decided",
                    () -> records.keySet().stream().noneMatch(name -> Files.exists(volume.resolve("engine").resolve(name))));
            awaitPasses(warden, 3);
            String log = warden.log();
            for (Seen bystander : List.of(server, exporter, undated, leader, member)) {
                assertTrue(ProcessHandle.of(bystander.pid()).map(ProcessHandle::isAlive).orElse(false),
                        bystander.name() + " pid " + bystander.pid() + " was killed:\n" + log);
            }
            assertTrue(log.contains("runs 'llama-swap-exporter', not llama-swap") && log.contains("the record has no created_at"), log);
            assertTrue(log.contains("the record is owned by UID " + NEIGHBOUR + " but llama-swap pid " + member.pid()
                    + " runs as UID " + WARDEN), log);
            assertFalse(log.contains("Reaping llama-server"), log);
        }
    }

    /**
     * Finding 9: the neighbour resets the library as lilbee does (an exclusive SQLite transaction on the
     * sync mark, never waiting) a thousand times while it floods status and readiness: none is refused.
     */
    @Test
    void noStatusFloodMakesALilbeeResetFail() throws Exception {
        try (WardenProcess warden = warden("neighbour-resets", List.of())) {
            warden.awaitReaper();
            Process flood = neighbour("""
                    import sys, threading, urllib.request
                    def ask(url):
                        while True:
                            try:
                                urllib.request.urlopen(url, timeout=5).read()
                            except Exception:
                                pass
                    for url in sys.argv[1:]:
                        for _ in range(3):
                            threading.Thread(target=ask, args=(url,), daemon=True).start()
                    print('flooding', flush=True)
                    threading.Event().wait()
                    """, "http://127.0.0.1:" + warden.port() + "/api/v1/status",
                    "http://127.0.0.1:" + warden.managementPort() + "/q/health/ready");
            assertEquals("flooding", firstLine(flood));
            Process resets = neighbour("""
                    import os, sqlite3, sys
                    os.umask(0)
                    refused = 0
                    for _ in range(1000):
                        con = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=0)
                        try:
                            con.execute('PRAGMA busy_timeout=0;')
                            con.execute('PRAGMA journal_mode=MEMORY;')
                            con.execute('BEGIN EXCLUSIVE TRANSACTION;')
                            con.execute('ROLLBACK;')
                        except sqlite3.OperationalError:
                            refused += 1
                        con.close()
                    print('refused', refused, flush=True)
                    """, volume.resolve("root/sync.lock").toString());
            assertEquals("refused 0", firstLine(resets));
            JsonNode library = warden.json("/api/v1/status").path("library");
            assertTrue(library.has("reset_running") && !library.has("error"), "status looked at the library: " + library);
        }
    }

    /**
     * Finding 10: the neighbour opens 100 connections to each port and leaves them idle, half of them
     * after a partial request line: the probes answer meanwhile, and warden closes every one at the request
     * head's deadline. Here the neighbour and the probes share the loopback, so the per-peer share is
     * lifted; ConnectionLimitsIT holds it against a neighbour in a pod's own network, the probes coming
     * from the node.
     */
    @Test
    void idleConnectionsAreLetGoAndTheProbesAnswerMeanwhile() throws Exception {
        try (WardenProcess warden = warden("neighbour-idle", List.of("-Dwarden.http.max-connections=512",
                "-Dwarden.http.max-connections-per-peer=256"))) {
            warden.awaitStatus("/q/health/ready", 200);
            Process idle = neighbour("""
                    import select, socket, sys, time
                    socks = []
                    for port in map(int, sys.argv[1:]):
                        for i in range(100):
                            s = socket.create_connection(('127.0.0.1', port))
                            if i % 2:
                                s.sendall(b'GET /q/health/live HTTP/1.1\\r\\n')
                            socks.append(s)
                    print('idle', flush=True)
                    start, open_ = time.monotonic(), set(socks)
                    # far above the 10 s request-head deadline, only so that a broken build fails rather than hangs
                    while open_ and time.monotonic() - start < 150:
                        for s in select.select(list(open_), [], [], 1)[0]:
                            if s.recv(1) == b'':
                                open_.discard(s)
                    print('open', len(open_), 'after', int(time.monotonic() - start), flush=True)
                    """, Integer.toString(warden.port()), Integer.toString(warden.managementPort()));
            BufferedReader out = new BufferedReader(new InputStreamReader(idle.getInputStream(), StandardCharsets.UTF_8));
            assertEquals("idle", out.readLine());
            while (idle.isAlive()) {
                assertEquals(200, warden.status("/q/health/live"), "200 idle connections do not silence the probes");
                idle.waitFor(2, TimeUnit.SECONDS);
            }
            String closed = out.readLine();
            assertTrue(closed != null && closed.startsWith("open 0 after "), "warden closes idle connections: " + closed);
            assertTrue(Integer.parseInt(closed.substring(closed.lastIndexOf(' ') + 1)) < 30, "at the 10 s deadline: " + closed);
        }
    }

    /**
     * Finding 11: the neighbour renames a file it already locked over the reaper lock: warden lets go of
     * the old file and stands by while the neighbour holds the new one (one reaper, never two), then
     * claims it once the neighbour exits.
     */
    @Test
    void aReplacedReaperLockMakesWardenStandByNotRunBeside() throws Exception {
        try (WardenProcess warden = warden("neighbour-reaper-lock", List.of())) {
            warden.awaitJson("/api/v1/status", "/reaper/watching", JsonNode::asBoolean);
            Path lock = volume.resolve("engine/engine-reaper.lock");
            assertEquals(java.util.Set.of(warden.pid()), KernelLocks.flockHolders(lock));
            Process rival = neighbour("""
                    import fcntl, os, sys
                    lock = sys.argv[1]
                    os.umask(0)
                    fd = os.open(lock + '.new', os.O_RDWR | os.O_CREAT, 0o666)
                    fcntl.flock(fd, fcntl.LOCK_EX)
                    os.rename(lock + '.new', lock)
                    print('holding', flush=True)
                    sys.stdin.read()
                    """, lock.toString());
            assertEquals("holding", firstLine(rival));
            warden.awaitJson("/api/v1/status", "/reaper/watching", watching -> !watching.asBoolean());
            assertEquals(java.util.Set.of(rival.pid()), KernelLocks.flockHolders(lock), "one reaper: the neighbour");
            rival.destroyForcibly().waitFor();
            warden.awaitJson("/api/v1/status", "/reaper/watching", JsonNode::asBoolean);
            assertEquals(java.util.Set.of(warden.pid()), KernelLocks.flockHolders(lock));
        }
    }

    /**
     * A user of another UID whose lock file has lilbee's own mode (0644: warden cannot open it for
     * writing) is a live user: the engine it uses is kept, and stopped once it exits.
     */
    @Test
    void aUserOfAnotherUidWithAReadOnlyLockFileKeepsTheEngine() throws Exception {
        try (WardenProcess warden = warden("neighbour-user", List.of())) {
            warden.awaitReaper();
            Process user = neighbour("""
                    import fcntl, os, sys
                    fd = os.open(os.path.join(sys.argv[1], 'lilbee.lock'), os.O_RDWR | os.O_CREAT, 0o644)
                    fcntl.flock(fd, fcntl.LOCK_EX)
                    print('using', flush=True)
                    sys.stdin.read()
                    """, volume.resolve("engine/engine-users").toString());
            assertEquals("using", firstLine(user));
            Seen engine = asWarden(true, "llama-swap").getFirst();
            Path record = Files.writeString(volume.resolve("engine/llama-swap.state.used." + engine.pid() + ".json"),
                    record(engine.pid(), engine.pid(), engine.createdAt(), FakeEngine.freePort()));
            // lilbee writes the record as the user its engine runs as; the user lock is the other UID's
            own(record, WARDEN, WARDEN);
            awaitPasses(warden, 5);
            assertTrue(ProcessHandle.of(engine.pid()).map(ProcessHandle::isAlive).orElse(false), "a live user's engine was stopped:\n" + warden.log());
            user.destroyForcibly().waitFor();
            Await.until("the engine is stopped once its user exits", () -> !ProcessHandle.of(engine.pid()).map(ProcessHandle::isAlive).orElse(false));
            Await.until("the dead user's lock file is removed", () -> !Files.exists(volume.resolve("engine/engine-users/lilbee.lock")));
        }
    }

    /** A process of warden's own UID as a bystander on the engine's turf: its argv[0] name, pid, group, session and start. */
    private record Seen(String name, long pid, long pgid, long sid, double createdAt) {
    }

    /**
     * Starts a process of warden's UID whose argv[0] is {@code name} (in a session of its own when
     * {@code session}), listening on {@code --port N} when given; "leader" also forks a llama-swap into
     * its own group. Returns what each said of itself; all are killed after the test.
     */
    private List<Seen> asWarden(boolean session, String name, String... args) throws IOException {
        List<String> command = new ArrayList<>(Setpriv.as(WARDEN, WARDEN));
        if (session) {
            command.add("setsid");
        }
        command.addAll(List.of("bash", "-c", "exec -a \"$0\" /usr/bin/python3 -c \"$1\" \"${@:2}\"", name, BYSTANDER, BYSTANDER));
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        neighbours.add(process);
        BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        List<Seen> seen = new ArrayList<>();
        for (int i = 0; i < (name.equals("leader") ? 2 : 1); i++) {
            String[] f = out.readLine().split(" ");
            Seen one = new Seen(f[0], Long.parseLong(f[1]), Long.parseLong(f[2]), Long.parseLong(f[3]), Double.parseDouble(f[4]));
            bystanders.add(one.pid());
            seen.add(one);
        }
        return seen;
    }

    /** What {@link #asWarden} runs: says who it is, forks a llama-swap when it is the leader, listens when asked, sleeps. */
    private static final String BYSTANDER = """
            import os, signal, socket, sys, time
            me, script = open('/proc/self/cmdline').read().split('\\0')[0], sys.argv[1]
            if me == 'leader':
                signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # no zombie: a stopped child is gone
                if os.fork() == 0:
                    os.execv('/usr/bin/python3', ['llama-swap', '-c', script, script])
            if '--port' in sys.argv:
                s = socket.socket()
                s.bind(('127.0.0.1', int(sys.argv[sys.argv.index('--port') + 1])))
                s.listen()
            print(me, os.getpid(), os.getpgid(0), os.getsid(0), time.time(), flush=True)
            time.sleep(3600)
            """;

    private static String record(long pid, long pgid, Double createdAt, int memberPort) {
        return String.format(java.util.Locale.ROOT, "{\"pid\": %d, \"pgid\": %d,%s \"name\": \"llama-swap\", \"member_ports\": [%d], \"proxy_port\": %d}",
                pid, pgid, createdAt == null ? "" : String.format(java.util.Locale.ROOT, " \"created_at\": %.3f,", createdAt), memberPort, memberPort + 1);
    }

    private static String firstLine(Process process) throws IOException {
        return new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8)).readLine();
    }


    /** Runs {@code script} as the neighbour's UID, in the background; killed after the test. */
    private Process neighbour(String script, String... args) throws IOException {
        List<String> command = new ArrayList<>(Setpriv.as(NEIGHBOUR, NEIGHBOUR));
        command.addAll(List.of("/usr/bin/python3", "-c", script));
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        neighbours.add(process);
        return process;
    }

    /** Waits until the reaper has finished {@code passes} more passes (its passes counter, summed over actions). */
    private static void awaitPasses(WardenProcess warden, int passes) throws Exception {
        double start = passes(warden);
        Await.until(passes + " reaper passes", () -> {
            try {
                return passes(warden) >= start + passes;
            } catch (IOException e) {
                return false;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        });
    }

    private static double passes(WardenProcess warden) throws IOException, InterruptedException {
        return warden.text("/q/metrics").lines().filter(l -> l.startsWith("warden_reaper_passes_total{"))
                .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
    }

    private static void own(Path path, int uid, int gid) throws IOException {
        Files.setAttribute(path, "unix:uid", uid, LinkOption.NOFOLLOW_LINKS);
        Files.setAttribute(path, "unix:gid", gid, LinkOption.NOFOLLOW_LINKS);
    }

    /** Every file under {@code root}: its owner, mode, size and content's digest. */
    private static Map<String, String> snapshot(Path root) throws Exception {
        Map<String, String> files = new TreeMap<>();
        try (var walk = Files.walk(root)) {
            for (Path file : (Iterable<Path>) walk::iterator) {
                Map<String, Object> a = Files.readAttributes(file, "unix:uid,gid,mode,size", LinkOption.NOFOLLOW_LINKS);
                String digest = Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)
                        ? HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file))) : "-";
                files.put(root.relativize(file).toString(), a.get("uid") + ":" + a.get("gid") + " " + Integer.toOctalString((Integer) a.get("mode"))
                        + " " + a.get("size") + " " + digest);
            }
        }
        return files;
    }
}
