package dev.warden.soak;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.Await;
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

    @BeforeEach
    void aVolumeTheNeighbourCanWriteAndFilesOutsideItThatOnlyWardenCan() throws Exception {
        Assumptions.assumeTrue("0".equals(new String(new ProcessBuilder("id", "-u").start().getInputStream().readAllBytes()).strip()),
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
        assertEquals("holding", new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8)).readLine());
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
