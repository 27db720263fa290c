package dev.warden.boundary;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.lock.FileLocker;
import dev.warden.testing.ProcLook;
import dev.warden.testing.Setpriv;
import dev.warden.testing.WardenProcess;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Another container of warden's pod, running as warden's own UID (as the chart runs every container):
 * a process in a mount namespace of its own, where warden's Secrets are not mounted, with warden's pid
 * in sight (the pod shares one PID namespace). It must not read them through {@code /proc/<warden>/},
 * nor warden's environment, nor run code in warden's JVM. A dumpable process of the same UID beside
 * warden is the control: the same reads of it succeed, so only warden's own boundary stops them.
 */
class ProcessBoundaryIT {

    private static final int UID = 4251;
    private static final String API_TOKEN = "api-t0ken-never-seen";
    private static final String ENGINE_KEY = "engine-k3y-never-seen";
    private static final String ACCOUNT_TOKEN = "account-t0ken-never-seen";
    private static final String CANARY = "env-canary-never-seen";

    @TempDir
    Path dir;

    private Path secrets;

    @BeforeEach
    void secrets() throws IOException {
        Assumptions.assumeTrue("0".equals(FileLocker.currentUid()),
                "SKIPPED: another UID and mount namespace need root (CI runs as root)");
        Files.setAttribute(dir, "unix:mode", 0755);
        secrets = Files.createDirectory(dir.resolve("secrets"));
        own(secrets);
        Files.setAttribute(secrets, "unix:mode", 0700);
        for (Map.Entry<String, String> secret : Map.of("api-token", API_TOKEN, "engine-key", ENGINE_KEY, "token", ACCOUNT_TOKEN)
                .entrySet()) {
            Path file = Files.writeString(secrets.resolve(secret.getKey()), secret.getValue());
            own(file);
            Files.setAttribute(file, "unix:mode", 0600);
        }
        own(Files.createDirectory(dir.resolve("root")));
        own(Files.createDirectory(dir.resolve("engine")));
    }

    private static void own(Path path) throws IOException {
        Files.setAttribute(path, "unix:uid", UID, LinkOption.NOFOLLOW_LINKS);
        Files.setAttribute(path, "unix:gid", UID, LinkOption.NOFOLLOW_LINKS);
    }

    private WardenProcess warden(String name, List<String> jvmOptions) throws IOException {
        List<String> settings = new ArrayList<>(jvmOptions);
        settings.add("-Dwarden.api.token-file=" + secrets.resolve("api-token"));
        settings.add("-Dwarden.engine.api-key-file=" + secrets.resolve("engine-key"));
        return WardenProcess.serveAs(UID, UID, dir.resolve("app"), name, Map.of("NEIGHBOUR_CANARY", CANARY), settings,
                "--data-root", dir.resolve("root").toString(), "--engine-dir", dir.resolve("engine").toString());
    }

    /** What another container, of warden's UID, reads of {@code pid} (see {@link ProcLook}). */
    private String neighbourLooksAt(long pid, boolean ownTmp) throws IOException, InterruptedException {
        String jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd").toString();
        // A container of its own: a mount namespace where the Secrets are not mounted, and (ownTmp) its own /tmp.
        String container = "mount -t tmpfs none \"$1\" && if [ \"$2\" = own ]; then mount -t tmpfs none /tmp; fi && shift 2 && exec "
                + String.join(" ", Setpriv.as(UID, UID)) + " \"$@\"";
        List<String> command = new ArrayList<>(List.of("unshare", "--mount", "--propagation", "private", "--", "sh", "-c", container,
                "container", secrets.toString(), ownTmp ? "own" : "shared"));
        command.addAll(ProcLook.command(Long.toString(pid), secrets.toString(), jcmd, CANARY, UID));
        Process neighbour = new ProcessBuilder(command).redirectErrorStream(true).start();
        String seen = new String(neighbour.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(neighbour.waitFor(60, TimeUnit.SECONDS), "the neighbour ended");
        return seen;
    }

    /** A JVM of warden's UID that is dumpable and attachable, in warden's mount namespace with the Secrets mounted. */
    private Process dumpableBeside() throws IOException {
        Path sleeper = Files.writeString(dir.resolve("Sleeper.java"),
                "class Sleeper { public static void main(String[] a) throws Exception { System.out.println(\"up\"); Thread.sleep(120_000); } }");
        List<String> command = new ArrayList<>(Setpriv.as(UID, UID));
        command.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-XX:TieredStopAtLevel=1",
                sleeper.toString()));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        process.getInputStream().read();
        return process;
    }

    @Test
    void anotherContainerOfWardensUidReadsNoSecretAndCannotAttach() throws Exception {
        // Started as the image starts it: no attach mechanism.
        try (WardenProcess warden = warden("boundary", List.of("-XX:+DisableAttachMechanism"))) {
            warden.awaitStatus("/q/health/started", 200);
            Process control = dumpableBeside();
            try {
                String ofControl = neighbourLooksAt(control.pid(), true);
                assertTrue(ofControl.contains("attached") && ofControl.contains("read fd") && ofControl.contains("sees the process"),
                        "the control: a dumpable JVM of the same UID is open to the neighbour: " + ofControl);
            } finally {
                control.destroyForcibly();
                control.waitFor(10, TimeUnit.SECONDS);
            }
            assertEquals(ProcLook.NOTHING_BUT_THE_PROCESS, neighbourLooksAt(warden.pid(), true),
                    "a neighbour with its own /tmp reads none of warden's Secrets, environment or descriptors and cannot attach");
            assertEquals(ProcLook.NOTHING_BUT_THE_PROCESS, neighbourLooksAt(warden.pid(), false),
                    "a neighbour sharing warden's /tmp cannot attach either");
            assertEquals(200, warden.status("/q/health/live"), "warden works on");
            assertEquals(200, warden.get("/api/v1/status", API_TOKEN).statusCode(), "and reads its own Secret");
        }
    }

    /**
     * A process of warden's UID may signal it. SIGUSR1 must not make warden write its heap, the API token and the engine
     * key in it, to disk: the native executable is built without GraalVM's monitoring (which Quarkus turns on for heap
     * dumps on SIGUSR1), and a JVM has no such handler. Warden may die of the signal, as of SIGKILL, which that process
     * may send too.
     */
    @Test
    void aNeighboursSigusr1WritesNoHeapDump() throws Exception {
        Path cwd = Files.createDirectory(dir.resolve("cwd"));
        try (WardenProcess warden = WardenProcess.serve("boundary-sigusr1", Map.of(), cwd, List.of(),
                "--data-root", dir.resolve("root").toString(), "--engine-dir", dir.resolve("engine").toString())) {
            warden.awaitStatus("/q/health/started", 200);
            new ProcessBuilder("kill", "-USR1", Long.toString(warden.pid())).inheritIO().start().waitFor();
            // A heap dump takes a moment to start writing; ProcessHandle.onExit covers the signal ending warden.
            ProcessHandle.of(warden.pid()).ifPresent(p -> p.onExit().completeOnTimeout(p, 3, TimeUnit.SECONDS).join());
            try (var files = Files.list(cwd)) {
                assertEquals(List.of(), files.map(f -> f.getFileName().toString()).toList(), "nothing written where warden runs");
            }
        }
    }

    @Test
    void aJvmStartedWithoutTheImagesFlagsIsStillClosedToAContainerWithItsOwnTmp() throws Exception {
        try (WardenProcess warden = warden("boundary-attachable", List.of())) {
            warden.awaitStatus("/q/health/started", 200);
            assertEquals(ProcLook.NOTHING_BUT_THE_PROCESS, neighbourLooksAt(warden.pid(), true),
                    "undumpable: the attach files cannot reach warden's cwd or /tmp through /proc");
            // The native executable has no JVM, so no attach mechanism to leave open or to warn of.
            assertEquals(!WardenProcess.nativeExecutable(), warden.log().contains("The JVM's attach mechanism is on"),
                    "and warden says what is left open");
        }
    }
}
