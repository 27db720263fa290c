package dev.warden.deploy;

import static dev.warden.testing.Podman.ok;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.warden.lock.FileLocker;
import dev.warden.testing.Await;
import dev.warden.testing.Command;
import dev.warden.testing.FakeEngine;
import dev.warden.testing.LoopbackHttp;
import dev.warden.testing.Peer;
import dev.warden.testing.Podman;
import dev.warden.testing.ProcLook;
import dev.warden.testing.RealLlamaServer;
import dev.warden.testing.RealLlamaSwap;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * warden's image as a container runtime runs it (podman; .ci/run builds the image on a local base),
 * checked from outside: the user, the filesystem and capabilities it runs with, its probes on a
 * published loopback port, its lock on a volume the host can see, SIGTERM, two containers on one
 * volume, and the plain manifests played with {@code podman kube play}. Runs with
 * {@code -Pcontainer -Dcontainer.image=... -Dcontainer.llama-swap-image=...}.
 */
class ImageContainerIT {

    @TempDir
    Path dir;

    private Path volume;
    private final List<String> containers = new ArrayList<>();
    private final List<Path> played = new ArrayList<>();
    private final List<String> pods = new ArrayList<>();

    private static String image(String name) {
        String image = Podman.image(name);
        if (image.isEmpty()) {
            String why = "no " + name + ": run with -Pcontainer -Dcontainer." + name + "=<image>, as .ci/run does";
            System.err.println("SKIPPED: " + why);
            Assumptions.abort(why);
        }
        return image;
    }

    /** A volume as a pod's fsGroup makes one: owned by warden's UID and group, setgid, group-writable. */
    @BeforeEach
    void aVolumeWardensUidCanWrite() throws IOException, InterruptedException {
        image("image");
        Assumptions.assumeTrue("0".equals(FileLocker.currentUid()),
                "SKIPPED: the volume is chowned to warden's UID, which needs root (CI runs as root)");
        Files.setAttribute(dir, "unix:mode", 0755);
        volume = Files.createDirectory(dir.resolve("volume"));
        Files.setAttribute(volume, "unix:uid", 1001);
        Files.setAttribute(volume, "unix:gid", 1001);
        Files.setAttribute(volume, "unix:mode", 02775);
    }

    @AfterEach
    void removeEveryContainer() throws Exception {
        for (Path yaml : played) {
            Podman.run("kube", "down", yaml.toString());
        }
        for (String name : containers) {
            Podman.run("rm", "-f", "-t", "0", name);
        }
        for (String pod : pods) {
            Podman.run("pod", "rm", "-f", "-t", "0", pod);
        }
    }

    /** {@code warden serve} in the image as the manifests run it, its management port published on loopback. */
    private String serve(String name, int managementPort, String... extra) throws IOException, InterruptedException {
        containers.add(name);
        List<String> args = new ArrayList<>(List.of("run", "-d", "--name", name, "--read-only", "--tmpfs", "/tmp:rw,mode=1777",
                "--cap-drop=ALL", "--security-opt=no-new-privileges", "-v", volume + ":/var/lib/lilbee",
                "-e", "WARDEN_DATA_ROOT=/var/lib/lilbee", "-e", "WARDEN_ENGINE_DIR=/var/lib/lilbee/engine",
                "-p", "127.0.0.1:" + managementPort + ":9096"));
        args.addAll(List.of(extra));
        args.add(image("image"));
        ok(args.toArray(String[]::new));
        return name;
    }

    private static int status(int port, String path) {
        return LoopbackHttp.status(port, path, Duration.ofSeconds(2));
    }

    /** Waits for {@code path} to answer {@code code}; fails with the container's log when it never does. */
    private static void awaitStatus(String container, int port, String path, int code) throws IOException, InterruptedException {
        try {
            Await.until(path + " on port " + port + " answers " + code, () -> status(port, path) == code);
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "\n" + container + ": " + Podman.run("ps", "-a", "--filter", "name=" + container,
                    "--format", "{{.Status}}").output() + "\n" + Podman.run("logs", container).output(), e);
        }
    }

    @Test
    void theImageRunsUnprivilegedOnAReadOnlyRootAndSigtermFreesTheLock() throws Exception {
        int port = FakeEngine.freePort();
        boolean nativeImage = Podman.nativeImage(image("image"));
        String name = "warden-it-" + System.nanoTime();
        String pagesSoon = "WARDEN_MEMORY_RELEASE_START_PAGES_AFTER=1s";
        String warden = nativeImage ? serve(name, port, "-e", pagesSoon)
                : serve(name, port, "-e", pagesSoon, "-e", "JAVA_OPTS_APPEND=-Dit.appended=yes -XX:AOTMode=on");
        awaitStatus(warden, port, "/q/health/ready", 200);
        assertEquals("1001", ok("exec", warden, "id", "-u"));
        assertEquals("CapEff:\t0000000000000000", ok("exec", warden, "grep", "CapEff", "/proc/1/status"));
        assertNotEquals(0, Podman.run("exec", warden, "touch", "/written").exitCode(), "the root filesystem is read-only");
        String cmdline = ok("exec", warden, "cat", "/proc/1/cmdline").replace('\0', ' ');
        if (nativeImage) {
            assertEquals("/usr/local/bin/warden serve", cmdline.strip(), "the executable itself, no JVM");
        } else {
            assertTrue(cmdline.contains("-Xmx64m") && cmdline.contains("-Dit.appended=yes"),
                    "JAVA_OPTS_APPEND adds to the image's flags: " + cmdline);
            // -XX:AOTMode=on makes the JVM refuse to start without the image's AOT cache: it was trained with
            // these very flags, JVM and class path, so warden starts from it (a rejected cache only shows as a slow start).
            assertTrue(cmdline.contains("-XX:AOTCache=/deployments/app.aot"), cmdline);
        }
        // The kernel reclaims a file's pages only for a process that owns it (or could write it): the executable, or the
        // AOT cache, is warden's, so the pages only its start needed go. The executable's are most of the native
        // image's resident memory; the cache's clean pages about a tenth of the JVM's (the JVM writes the rest).
        Await.until("warden gave its start's pages back", () -> logs(warden).contains("Gave back the pages"));
        String log = logs(warden);
        Matcher resident = Pattern.compile("resident ([0-9.]+) MiB, now ([0-9.]+) MiB").matcher(log);
        assertTrue(resident.find(), log);
        double before = Double.parseDouble(resident.group(1));
        double now = Double.parseDouble(resident.group(2));
        assertTrue(nativeImage ? now < before / 2 : now < before - 5, "warden's own files' pages given back: " + log);
        assertFalse(ok("exec", warden, "ls", "-a", "/tmp").contains("hsperfdata"), "no hsperfdata in a shared /tmp");
        assertFalse(ok("logs", warden).contains("own filesystem"), "a data root on a volume is not warned about");

        Path lock = volume.resolve("data/server.lock");
        assertFalse(Peer.flockCanTake(lock), "the host's flock(1) sees the container's lock");
        // Group-writable (warden clears its umask's group-write bit): another UID of the fsGroup may open them.
        assertEquals(0664, mode(lock), Integer.toOctalString(mode(lock)));
        assertEquals(0775, mode(lock.getParent()) & 0777, Integer.toOctalString(mode(lock.getParent())));

        ok("stop", "-t", "30", warden);
        assertEquals("0", ok("inspect", warden, "--format", "{{.State.ExitCode}}"), ok("logs", warden));
        assertTrue(Peer.flockCanTake(lock), "SIGTERM lets go of the lock");
    }

    /** A data root on the container's own filesystem (no volume mounted) is said at start, with the fix. */
    /**
     * Two containers of one pod sharing its PID namespace, both of UID 1001 as the chart runs them: the
     * other container (its own root, its own /tmp, no Secret mounted) sees warden's process but reads none
     * of the Secret mounted for warden, nor its environment or descriptors, and cannot attach to its JVM (the native
     * image has none).
     */
    @Test
    void anotherContainerOfThePodReadsNoneOfWardensSecretsAndCannotAttach() throws Exception {
        String pod = "warden-boundary-" + System.nanoTime();
        ok("pod", "create", "--name", pod, "--share", "+pid");
        pods.add(pod);
        Path secrets = Files.createDirectory(dir.resolve("secrets"));
        for (String name : List.of("api-token", "engine-key", "token")) {
            Path file = Files.writeString(secrets.resolve(name), name + "-never-seen");
            Files.setAttribute(file, "unix:uid", 1001);
            Files.setAttribute(file, "unix:mode", 0600);
        }
        Files.setAttribute(secrets, "unix:uid", 1001);
        Files.setAttribute(secrets, "unix:mode", 0700);
        String warden = pod + "-warden";
        ok("run", "-d", "--pod", pod, "--name", warden, "--read-only", "--tmpfs", "/tmp:rw,mode=1777", "--cap-drop=ALL",
                "--security-opt=no-new-privileges", "-v", volume + ":/var/lib/lilbee", "-v", secrets + ":/var/run/secrets/warden:ro",
                "-e", "WARDEN_DATA_ROOT=/var/lib/lilbee", "-e", "WARDEN_ENGINE_DIR=/var/lib/lilbee/engine",
                "-e", "WARDEN_API_TOKEN_FILE=/var/run/secrets/warden/api-token", "-e", "NEIGHBOUR_CANARY=env-canary-never-seen",
                image("image"));
        Await.until("warden is ready", () -> readyInside(warden) == 200);
        String find = "p=$(for d in /proc/[0-9]*; do tr '\\0' ' ' 2>/dev/null < $d/cmdline | grep -qE '(quarkus-run.jar|/usr/local/bin/warden) serve'"
                + " && echo ${d#/proc/}; done | head -1); ";
        // The control: the image's jcmd attaches to a JVM of this container's own; the native image has no JVM to
        // attach to, and its control is the look itself reading a process of this container's own.
        boolean nativeImage = Podman.nativeImage(image("image"));
        String controlSaw = nativeImage ? "control read environ" : "control attached";
        String control = nativeImage
                ? "NEIGHBOUR_CANARY=env-canary-never-seen sleep 30 & c=$!; sh -c \"$0\" look $c /none none env-canary-never-seen 1001"
                        + " | grep -q 'read environ' && echo '" + controlSaw + "'; kill $c; "
                : "/opt/java/openjdk/bin/jwebserver -b 127.0.0.1 -p 0 -d /tmp >/dev/null 2>&1 & c=$!; sleep 3;"
                        + " /opt/java/openjdk/bin/jcmd $c VM.version 2>&1 | grep -q JDK && echo '" + controlSaw + "'; kill $c; ";
        List<String> look = ProcLook.command("$p", "/var/run/secrets/warden", "/opt/java/openjdk/bin/jcmd", "env-canary-never-seen", 1001);
        String seen = ok("run", "--rm", "--pod", pod, "--read-only", "--tmpfs", "/tmp:rw,mode=1777", "--cap-drop=ALL",
                "--security-opt=no-new-privileges", "--user", "1001:1001", "--entrypoint", "sh", image("image"), "-c",
                find + control + "exec sh -c \"$0\" look \"$p\" \"$@\"", ProcLook.script(), look.get(5), look.get(6), look.get(7),
                look.get(8));
        assertEquals(controlSaw + "\n" + ProcLook.NOTHING_BUT_THE_PROCESS.strip(), seen,
                "the other container reads a process of its own, and sees warden and nothing of it");
        assertTrue(ok("logs", warden).lines().noneMatch(l -> l.contains("attach mechanism is on")), "the image starts the JVM without it");
    }

    @Test
    void aDataRootWithNoVolumeIsNamedInTheLog() throws Exception {
        int port = FakeEngine.freePort();
        String name = "warden-it-novolume-" + System.nanoTime();
        containers.add(name);
        ok("run", "-d", "--name", name, "--tmpfs", "/tmp:rw,mode=1777", "--cap-drop=ALL", "-e", "WARDEN_DATA_ROOT=/var/tmp/lilbee",
                "-e", "WARDEN_ENGINE_DIR=/var/tmp/lilbee/engine", "-p", "127.0.0.1:" + port + ":9096", image("image"));
        awaitStatus(name, port, "/q/health/ready", 200);
        assertTrue(ok("logs", name).contains("The data root /var/tmp/lilbee is on this container's own filesystem, not on a"
                + " volume"), ok("logs", name));
    }

    /** Two containers on one volume: exactly one ready; SIGKILL the ready one and the other takes over. */
    @Test
    void twoContainersOnOneVolumeGiveOneReadyAndAKillFailsOver() throws Exception {
        int first = FakeEngine.freePort();
        int second = FakeEngine.freePort();
        String holder = serve("warden-it-a-" + System.nanoTime(), first);
        awaitStatus(holder, first, "/q/health/ready", 200);
        String standby = serve("warden-it-b-" + System.nanoTime(), second);
        // Not started either: the startup probe, which holds llama-swap back, waits for the lock.
        awaitStatus(standby, second, "/q/health/live", 200);
        assertEquals(503, status(second, "/q/health/started"), "the standby has not started while the holder lives");
        assertEquals(503, status(second, "/q/health/ready"), "the standby is not ready while the holder lives");
        assertEquals(200, status(first, "/q/health/ready"));

        long killed = System.nanoTime();
        ok("kill", "--signal", "KILL", holder);
        while (status(second, "/q/health/ready") != 200) {
            assertTrue(System.nanoTime() - killed < Duration.ofSeconds(30).toNanos(), "the standby never took over: " + ok("logs", standby));
            Thread.sleep(10);
        }
        // A number for the closing note and the benchmarks, not an assertion: tests check behaviour.
        System.out.printf("container failover: ready %d ms after podman kill%n", (System.nanoTime() - killed) / 1_000_000);
        assertEquals(-1, status(first, "/q/health/ready"));
    }

    /**
     * The plain manifests as written, played by podman: the classic-sidecar overlay (podman refuses
     * native sidecars), warden and the real llama-swap side by side, both unprivileged.
     */
    @Test
    void theClassicSidecarOverlayPlaysWithTheRealLlamaSwap() throws Exception {
        image("llama-swap-image");
        ok("kube", "play", playable("play", deployment -> { }).toString());
        // podman publishes every containerPort on the host: probes and llama-swap on loopback.
        awaitStatus("warden-pod-0-warden", 9096, "/q/health/ready", 200);
        awaitStatus("warden-pod-0-llama-swap", 8080, "/health", 200);
        // The real model loaded: its llama-server runs in llama-swap's container, beside warden's.
        awaitStatus("warden-pod-0-llama-swap", 8080, "/upstream/" + RealLlamaSwap.MODEL + "/health", 200);
        assertEquals(1, podProcesses("/app/llama-server").size(), "one llama-server in the pod");
        for (String container : List.of("warden-pod-0-warden", "warden-pod-0-llama-swap")) {
            assertEquals("1001", ok("exec", container, "id", "-u"), container);
            assertEquals("CapEff:\t0000000000000000", ok("exec", container, "grep", "CapEff", "/proc/self/status"), container);
            assertNotEquals(0, Podman.run("exec", container, "touch", "/written").exitCode(), container + ": read-only root");
        }
        // `warden status` in the pod beside the serving warden, as `kubectl exec` runs it: no port collides.
        String status = ok("exec", "warden-pod-0-warden", "warden", "status");
        assertTrue(status.contains("/var/lib/lilbee/data/server.lock: held by pid"), status);
        // One process namespace: warden sees llama-swap, which it must be able to signal.
        assertTrue(ok("exec", "warden-pod-0-warden", "sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '").contains("llama-swap"));
        lastUserOutStopsTheEngineAcrossContainers();
        // The container, not the pod: podman 4.3's `pod stop` ends the pause process first, the PID 1 of a
        // shared process namespace, and the kernel then SIGKILLs every other process of the pod.
        ok("stop", "-t", "30", "warden-pod-0-warden");
        assertEquals("0", ok("inspect", "warden-pod-0-warden", "--format", "{{.State.ExitCode}}"), ok("logs", "warden-pod-0-warden"));
    }

    /**
     * Two pods played from the classic-sidecar overlay share its emptyDir (podman shares one by name
     * across pods, as a ReadWriteMany volume would be shared): exactly one is ready; {@code podman pod
     * kill} of that one makes the other ready. Their containerPorts are dropped (podman would publish each
     * on the host, twice); each warden is asked from inside its own pod, over bash's /dev/tcp.
     */
    @Test
    void twoPlayedPodsOnOneVolumeGiveOneReadyAndAPodKillFailsOver() throws Exception {
        image("llama-swap-image");
        for (String pod : List.of("warden-a", "warden-b")) {
            ok("kube", "play", playable(pod, deployment -> {
                ((ObjectNode) deployment.path("metadata")).put("name", pod);
                deployment.at("/spec/template/spec/containers").forEach(container -> ((ObjectNode) container).remove("ports"));
            }).toString());
            if (pod.equals("warden-a")) {
                Await.until("warden-a is ready", () -> readyInside("warden-a-pod-0-warden") == 200);
            }
        }
        Await.until("warden-b answers as a standby", () -> readyInside("warden-b-pod-0-warden") == 503);
        assertEquals(200, readyInside("warden-a-pod-0-warden"), "one ready pod");

        long killed = System.nanoTime();
        ok("pod", "kill", "--signal", "KILL", "warden-a-pod-0");
        while (readyInside("warden-b-pod-0-warden") != 200) {
            assertTrue(System.nanoTime() - killed < Duration.ofSeconds(30).toNanos(), "warden-b never took over: "
                    + ok("logs", "warden-b-pod-0-warden"));
        }
        // For the closing note: each ask is a podman exec, so this is coarse (about a tenth of a second a sample).
        System.out.printf("pod failover: ready %d ms after podman pod kill%n", (System.nanoTime() - killed) / 1_000_000);
    }

    /**
     * k8s/overlays/classic-sidecar as written, made playable here and written to {@code name}.yaml: the local images
     * (the manifests name warden:0.1.0 and llama-swap:cpu); llama-swap's config naming the image's real llama-server
     * and model (the manifests' own names none); and without the environment podman 4.3's kube play cannot resolve
     * (it knows the metadata fieldRefs alone, not the node's status.hostIPs: warden then counts the pod's gateway as
     * the node, as it does wherever the variable is missing). Then {@code adjust} on the Deployment.
     */
    private Path playable(String name, java.util.function.Consumer<JsonNode> adjust) throws Exception {
        String rendered = Command.ok(null, List.of("kubectl", "kustomize", "k8s/overlays/classic-sidecar"));
        StringBuilder out = new StringBuilder();
        for (JsonNode object : PodChecks.objects(rendered)) {
            if (object.path("kind").asText().equals("ConfigMap") && object.at("/data").has("config.yaml")) {
                ((ObjectNode) object.path("data")).put("config.yaml", RealLlamaServer.IMAGE_CONFIG);
            }
            if (object.path("kind").asText().equals("Deployment")) {
                for (JsonNode container : object.at("/spec/template/spec/containers")) {
                    String image = container.path("image").asText();
                    ((ObjectNode) container).put("image", image.startsWith("warden:") ? image("image") : image("llama-swap-image"));
                    java.util.Iterator<JsonNode> env = container.path("env").iterator();
                    while (env.hasNext()) {
                        if (env.next().at("/valueFrom/fieldRef/fieldPath").asText().startsWith("status.")) {
                            env.remove();
                        }
                    }
                }
                adjust.accept(object);
            }
            out.append(new YAMLMapper().writeValueAsString(object));
        }
        Path play = Files.writeString(dir.resolve(name + ".yaml"), out.toString());
        played.add(play);
        return play;
    }

    /**
     * lilbee's part, stood in for: a user of the engine ({@code warden exec --hold engine-user}, which lilbee's
     * own probe counts as a user), then llama-swap recorded as lilbee records it (its pid, group and start).
     * While the user lives the engine stays; SIGKILL the user and warden stops llama-swap, a process of
     * another container of the pod, by its pid in the pod's one process namespace.
     */
    private void lastUserOutStopsTheEngineAcrossContainers() throws Exception {
        String warden = "warden-pod-0-warden";
        ok("exec", "-d", warden, "warden", "exec", "--hold", "engine-user", "--", "sleep", "600");
        Await.until("the user holds the engine", () -> engineLook().path("live_users").size() == 1);
        String[] engine = podProcesses("/app/llama-swap").getFirst().split(" ");
        String started = ok("inspect", "warden-pod-0-llama-swap", "--format", "{{.State.StartedAt}}");
        double createdAt = java.time.OffsetDateTime.parse(started.substring(0, started.lastIndexOf(' ')),
                java.time.format.DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.n xx")).toInstant().toEpochMilli() / 1000.0;
        String record = String.format(java.util.Locale.ROOT, "{\"pid\": %s, \"pgid\": %s, \"created_at\": %.3f, \"name\":"
                + " \"llama-swap\", \"member_ports\": [%d], \"proxy_port\": 8080}", engine[0], engine[1], createdAt,
                RealLlamaServer.IMAGE_MEMBER_PORT);
        ok("exec", warden, "sh", "-c", "printf '%s' '" + record + "' > /var/lib/lilbee/engine/.record && mv /var/lib/lilbee/engine/.record"
                + " /var/lib/lilbee/engine/llama-swap.state.default." + engine[0] + ".json");
        Await.until("warden knows the recorded llama-swap as ours", () -> engineLook().at("/records/0/ours").asText().equals("yes"));
        double kept = usersLivePasses();
        Await.until("three passes find the user live", () -> usersLivePasses() >= kept + 3);
        assertTrue(ok("ps", "--filter", "name=warden-pod-0-llama-swap", "--format", "{{.Status}}").startsWith("Up"));

        ok("exec", warden, "bash", "-c", "for p in /proc/[0-9]*; do case \"$(tr '\\0' ' ' 2>/dev/null < $p/cmdline)\" in"
                + " java\\ *engine-user*|warden\\ exec\\ *engine-user*) kill -KILL ${p#/proc/};; esac; done");
        Await.until("warden stops llama-swap once its last user is gone",
                () -> logs(warden).contains("stopped llama-swap pid " + engine[0]));
        Await.until("its llama-server is gone with it", () -> podProcesses("/app/llama-server").isEmpty());
    }

    /** "pid pgid" of each process in the played pod whose command line starts with {@code command}, as warden sees them. */
    private static List<String> podProcesses(String command) {
        try {
            String found = ok("exec", "warden-pod-0-warden", "bash", "-c", "for p in /proc/[0-9]*; do case \"$(tr '\\0' ' '"
                    + " 2>/dev/null < $p/cmdline)\" in " + command + "*) echo ${p#/proc/} $(cut -d' ' -f5 $p/stat);; esac; done");
            return found.lines().filter(l -> !l.isBlank()).toList();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The status API's engine, asked from inside the pod: without a token it answers only on the pod's loopback. */
    private static JsonNode engineLook() {
        try {
            Command.Run run = Podman.run("exec", "warden-pod-0-warden", "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/9095 && printf 'GET"
                    + " /api/v1/status HTTP/1.0\\r\\n\\r\\n' >&3 && sed '1,/^\\r$/d' <&3");
            return new com.fasterxml.jackson.databind.ObjectMapper().readTree(run.output()).at("/engines/0");
        } catch (IOException e) {
            return com.fasterxml.jackson.databind.node.MissingNode.getInstance();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return com.fasterxml.jackson.databind.node.MissingNode.getInstance();
        }
    }

    private static double usersLivePasses() {
        return LoopbackHttp.body(9096, "/q/metrics", Duration.ofSeconds(5)).map(metrics -> {
            try {
                return metrics.lines().filter(l -> l.startsWith("warden_reaper_passes_total{") && l.contains("action=\"users-live\""))
                        .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
            } catch (NumberFormatException e) {
                return -1.0;
            }
        }).orElse(-1.0);
    }

    private static String logs(String container) {
        try {
            return ok("logs", container);
        } catch (IOException | AssertionError e) {
            return "";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "";
        }
    }

    /** The HTTP status of warden's readiness probe, asked inside its container over bash's /dev/tcp (-1: no answer). */
    private static int readyInside(String container) {
        try {
            Command.Run run = Podman.run("exec", container, "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/9096 && printf 'GET"
                    + " /q/health/ready HTTP/1.0\\r\\n\\r\\n' >&3 && head -1 <&3");
            String[] status = run.output().split(" ");
            return run.exitCode() == 0 && status.length > 1 ? Integer.parseInt(status[1]) : -1;
        } catch (IOException | NumberFormatException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    private static int mode(Path path) throws IOException {
        return (Integer) Files.getAttribute(path, "unix:mode", LinkOption.NOFOLLOW_LINKS) & 07777;
    }

}
