package dev.warden.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.KubernetesListBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Predicate;
import java.util.stream.Stream;

/**
 * Two replicas of one workload on a {@link KubeletCluster}, in a namespace of their own that PodSecurity holds
 * to {@code restricted}, sharing one ReadWriteMany hostPath claim ({@code shared-lilbee}; each node shows its
 * pods a directory of its own), with a {@link ServingWatch} of their pods and Service from the start: the
 * chart installed with helm ({@link #helm}), or plain manifests ({@link #manifests}).
 */
public final class ClusterRelease implements AutoCloseable {

    public static final String RELEASE = "w";
    public static final String FULLNAME = "w-warden";
    public static final String NODE1 = "warden-node";
    /** Gate mode with the reference lilbee image the cluster imported, routed as the chart's default says (by role). */
    public static final List<String> GATE_DEFAULT = List.of("--set", "mode=gate", "--set", "lilbee.image.repository=localhost/lilbee",
            "--set-string", "lilbee.image.tag=0.6.90b449", "--set", "lilbee.image.pullPolicy=Never");
    /** Gate mode routed by readiness: only the serving pod is Ready. */
    public static final List<String> GATE = Stream.concat(GATE_DEFAULT.stream(), Stream.of("--set", "gate.routing=readiness")).toList();
    /**
     * Gate mode routing clients by role: every healthy pod Ready, the Service routing through the Endpoints the serving
     * warden writes.
     */
    public static final List<String> GATE_ROLE = Stream.concat(GATE_DEFAULT.stream(), Stream.of("--set", "gate.routing=role")).toList();
    /** Gate mode elected through a Lease, one pod per node (file locks do not meet across the nodes), routed by default. */
    public static final List<String> GATE_LEASE = Stream.concat(GATE_DEFAULT.stream(), Stream.of("--set", "gate.election=lease",
            "--set-json", "affinity={\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"labelSelector\":"
                    + "{\"matchLabels\":{\"app.kubernetes.io/instance\":\"w\"}},\"topologyKey\":\"kubernetes.io/hostname\"}]}}"))
            .toList();

    /** A kill of something in a pod, given the pod's name. */
    public interface Kill {
        void apply(String pod) throws Exception;
    }

    private final KubeletCluster cluster;
    private final String helm;
    private final String namespace;
    private final List<String> values;
    private final Predicate<Pod> standing;
    private final boolean role;
    private final ServingWatch watch;
    /**
     * Gate mode: the moments two pods had a lilbee serve holding server.lock at once (each writes the data dir). Null
     * in hold mode (no lilbee), and for plain replicas, which race for the lock by design.
     */
    private final OverlapWatch lilbees;
    private final List<Stale> stale = new java.util.concurrent.CopyOnWriteArrayList<>();
    private Duration installed = Duration.ZERO;

    private ClusterRelease(KubeletCluster cluster, String helm, String namespace, List<String> values, String selector,
            String service, Predicate<Pod> standing, boolean gate, boolean role) {
        this.cluster = cluster;
        this.helm = helm;
        this.namespace = namespace;
        this.values = values;
        this.role = role;
        // With role routing a healthy standby is Ready: it stands by only then.
        this.standing = role ? standing.and(ServingWatch.READY) : standing;
        this.watch = new ServingWatch(cluster.client(), namespace, selector, ServingWatch.READY, role, service);
        this.lilbees = gate ? OverlapWatch.of(() -> PodLilbees.serving(watch.everSeen())) : null;
    }

    /** warden's image the chart runs: jvm (localhost/warden:0.1.0) or native (:0.1.0-native), from -Dinterop.warden-flavour. */
    public static String wardenFlavour() {
        return System.getProperty("warden.interop.warden-flavour", "jvm");
    }

    /**
     * The chart, 2 replicas, warden's and llama-swap's local images, plus {@code modeValues}; {@code node}: every
     * pod there (file locks meet only on one kernel), null: wherever the values say. Returns once a pod serves.
     */
    public static ClusterRelease helm(KubeletCluster cluster, String helm, String namespace, List<String> modeValues, String node)
            throws Exception {
        claim(cluster, namespace);
        List<String> values = new ArrayList<>(List.of("--set", "replicas=2", "--set", "storage.existingClaim=shared-lilbee",
                "--set", "storage.accessModes={ReadWriteMany}", "--set", "image.repository=localhost/warden",
                "--set", "image.flavour=" + wardenFlavour(), "--set", "image.pullPolicy=Never", "--set", "engine.image.repository=localhost/llama-swap",
                "--set-string", "engine.image.tag=cpu", "--set", "engine.image.pullPolicy=Never"));
        // llama-swap's config names the image's real llama-server and model (the chart's default names none).
        Path engineConfig = Files.writeString(Files.createDirectories(Path.of("target").toAbsolutePath())
                .resolve("kubelet-llama-swap-config.yaml"), RealLlamaServer.IMAGE_CONFIG);
        values.addAll(List.of("--set-file", "engine.config=" + engineConfig));
        values.addAll(modeValues);
        if (node != null) {
            values.addAll(List.of("--set-string", "nodeSelector.kubernetes\\.io/hostname=" + node));
        }
        // The Deployment's pods (its selector's name label), not the helm test's. A standby stands by once its warden
        // runs, and in gate mode once lilbee's supervisor runs too: the kubelet starts it only after warden's startup
        // probe, a second or more after warden's container is running.
        boolean gate = modeValues.contains("mode=gate");
        ClusterRelease release = new ClusterRelease(cluster, helm, namespace, values, "app.kubernetes.io/name=warden", FULLNAME,
                pod -> running(pod, "warden") && (!gate || running(pod, "lilbee")), gate,
                gate && !modeValues.contains("gate.routing=readiness"));
        long started = System.nanoTime();
        release.helm("install", "--wait", "--timeout", "5m");
        release.installed = release.firstServing(started, Duration.ofMinutes(5));
        return release;
    }

    /**
     * {@code yaml} applied in the namespace: pods {@code selector} picks, behind {@code service}. Returns once one serves.
     * Their lilbees are not watched: plain replicas race for the lock by design.
     */
    public static ClusterRelease manifests(KubeletCluster cluster, String namespace, String yaml, String selector, String service)
            throws Exception {
        claim(cluster, namespace);
        ClusterRelease release = new ClusterRelease(cluster, null, namespace, List.of(), selector, service,
                pod -> pod.getSpec().getNodeName() != null, false, false);
        long started = System.nanoTime();
        cluster.kubectl().ok(yaml, "-n", namespace, "apply", "-f", "-");
        release.installed = release.firstServing(started, Duration.ofMinutes(5));
        return release;
    }

    /** The namespace, and its claim bound to a hostPath volume every node has (owned by the pods' UID). */
    private static void claim(KubeletCluster cluster, String namespace) throws IOException, InterruptedException {
        Kubectl kubectl = cluster.kubectl();
        kubectl.ok(null, "create", "namespace", namespace);
        kubectl.ok(null, "label", "namespace", namespace, "pod-security.kubernetes.io/enforce=restricted",
                "pod-security.kubernetes.io/warn=restricted");
        for (int n = 1; n <= 2; n++) {
            Path dir = Files.createDirectories(cluster.shared(n).resolve(namespace));
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwx---"));
            Command.ok(null, List.of("chown", "1001:1001", dir.toString()));
        }
        kubectl.ok("""
                apiVersion: v1
                kind: PersistentVolume
                metadata: {name: shared-%1$s}
                spec:
                  capacity: {storage: 1Gi}
                  accessModes: [ReadWriteMany]
                  persistentVolumeReclaimPolicy: Retain
                  storageClassName: ""
                  claimRef: {namespace: %1$s, name: shared-lilbee}
                  hostPath: {path: %2$s, type: Directory}
                ---
                apiVersion: v1
                kind: PersistentVolumeClaim
                metadata: {name: shared-lilbee, namespace: %1$s}
                spec:
                  accessModes: [ReadWriteMany]
                  storageClassName: ""
                  volumeName: shared-%1$s
                  resources: {requests: {storage: 1Gi}}
                """.formatted(namespace, cluster.sharedPath().resolve(namespace)), "apply", "-f", "-");
    }

    /** helm {@code verb} on this release with its values and {@code more}. */
    public String helm(String verb, String... more) throws Exception {
        List<String> command = new ArrayList<>(List.of(helm, verb, RELEASE, "helm/warden", "-n", namespace,
                "--kubeconfig", cluster.kubectl().kubeconfig().toString()));
        command.addAll(values);
        command.addAll(List.of(more));
        return Command.ok(null, command);
    }

    public ServingWatch watch() {
        return watch;
    }

    /** From the install until a pod first served. */
    public Duration installed() {
        return installed;
    }

    public Pod pod(String name) {
        return Optional.ofNullable(watch.pods().get(name)).orElseThrow(() -> new AssertionError("no pod " + name + " in " + namespace));
    }

    private static boolean running(Pod pod, String container) {
        return statuses(pod).anyMatch(s -> s.getName().equals(container) && s.getState().getRunning() != null);
    }

    private static Stream<ContainerStatus> statuses(Pod pod) {
        return Stream.concat(pod.getStatus().getInitContainerStatuses().stream(), pod.getStatus().getContainerStatuses().stream());
    }

    public static ContainerStatus status(Pod pod, String container) {
        return statuses(pod).filter(s -> s.getName().equals(container)).findFirst()
                .orElseThrow(() -> new AssertionError("no status of " + container + " in " + pod.getMetadata().getName()));
    }

    /**
     * What a failure about {@code container}'s restarts needs to be understood from CI's output alone: its status (the
     * last run's reason and exit code), the end of that run's log, and the kubelet's events for the pod.
     */
    public String restartsOf(String pod, String container) {
        return status(pod(pod), container) + "\n--- its previous run's log:\n"
                + cluster.kubectl().poll("-n", namespace, "logs", "--previous", "--tail=40", "-c", container, pod).orElse("(none)")
                + "\n--- the pod's events:\n"
                + cluster.kubectl().poll("-n", namespace, "get", "events", "--sort-by=.lastTimestamp",
                        "--field-selector", "involvedObject.name=" + pod).orElse("(none)");
    }

    /**
     * Gate mode: how long each lilbee of {@code pod} took from its supervisor's start of it (on warden's permit) to
     * listening, oldest first, as lilbee's container log says with the container runtime's own timestamps.
     */
    public List<Duration> goToListening(String pod) {
        String log = cluster.kubectl().poll("-n", namespace, "logs", "--timestamps", "-c", "lilbee", pod).orElse("");
        List<Duration> found = new ArrayList<>();
        Instant go = null;
        for (String line : log.lines().toList()) {
            int space = line.indexOf(' ');
            Instant at;
            try {
                at = Instant.parse(line.substring(0, Math.max(space, 0)));
            } catch (DateTimeParseException e) {
                continue;
            }
            String text = line.substring(space + 1);
            if (text.contains("warden's permit: starting lilbee")) {
                go = at;
            } else if (go != null && text.startsWith("Listening on ")) {
                found.add(Duration.between(go, at));
                go = null;
            }
        }
        return found;
    }

    public String servingPod() {
        Set<String> serving = watch.serving();
        assertEquals(1, serving.size(), "one pod serving: " + serving);
        return serving.iterator().next();
    }

    /** One pod serving and the one ready endpoint, the other standing by. */
    public void steady() {
        Await.until("one pod serves and one stands by in " + namespace, Duration.ofMinutes(6), () -> {
            Set<String> serving = watch.serving();
            long standby = watch.pods().values().stream().filter(p -> p.getMetadata().getDeletionTimestamp() == null)
                    .filter(p -> !serving.contains(p.getMetadata().getName())).filter(standing).count();
            return serving.size() == 1 && serving.equals(watch.endpoints()) && standby == 1;
        });
    }

    /** Hold mode: steady, and in the standby {@code main} never started (a native sidecar's pod starts it after warden). */
    public void oneServingAndTheStandbysMainContainerNeverStarted(String main) {
        steady();
        for (Pod pod : standbys()) {
            ContainerStatus standby = status(pod, main);
            assertNotEquals(Boolean.TRUE, standby.getStarted(), main + " started in the standby: " + standby);
            assertTrue(standby.getState().getWaiting() != null, main + " in the standby: " + standby);
            assertTrue(standby.getLastState() == null || standby.getLastState().getTerminated() == null, "it never ran: " + standby);
        }
        assertEquals(Set.of(servingPod()), watch.endpoints(), "only the serving pod is a ready endpoint");
    }

    /**
     * Gate mode: steady; in the standby lilbee's container runs its supervisor, never restarted, and no {@code lilbee
     * serve} runs (its prepared process, lilbee's modules loaded, waits; one it stopped has exited); only the serving
     * pod's lilbee holds server.lock. Routed by readiness, the standby's lilbee container is not ready; by role, the
     * standby is Ready and not routed to.
     */
    public void oneServingAndTheStandbysLilbeeNeverStarted() {
        steady();
        for (Pod pod : standbys()) {
            ContainerStatus standby = status(pod, "lilbee");
            assertTrue(standby.getState().getRunning() != null, "the standby's supervisor runs: " + standby);
            if (role) {
                assertTrue(ServingWatch.READY.test(pod), "the standby is Ready: " + pod.getStatus());
                assertFalse(watch.endpoints().contains(pod.getMetadata().getName()), "the standby is not routed to");
            } else {
                assertNotEquals(Boolean.TRUE, standby.getReady(), "lilbee's container ready in the standby: " + standby);
            }
            assertEquals(0, standby.getRestartCount(), () -> "lilbee's container restarted in the standby: "
                    + restartsOf(pod.getMetadata().getName(), "lilbee"));
            // A pod that stepped down unlocked the gate once its lilbee let server.lock go, which then takes a moment to
            // exit (0.6 s here; SIGKILLed after the supervisor's grace, 2 s): none runs there after that.
            String uid = pod.getMetadata().getUid();
            Await.until("no lilbee serve in the standby " + pod.getMetadata().getName(), Duration.ofSeconds(5),
                    () -> PodLilbees.processesIn(uid).isEmpty());
        }
        String serving = servingPod();
        assertEquals(Set.of(serving), watch.endpoints(), "only the serving pod is a ready endpoint");
        // Also proves the look at the kernel finds a serving lilbee: one that never did would see no overlap.
        assertEquals(List.of(serving), PodLilbees.serving(watch.everSeen()), "only the serving pod's lilbee holds server.lock");
    }

    private List<Pod> standbys() {
        String serving = servingPod();
        return watch.pods().values().stream().filter(p -> !p.getMetadata().getName().equals(serving)).toList();
    }

    /** The process of {@code pod}'s lilbee serve that holds server.lock now, as a handle bound to that instance. */
    public ProcessHandle lilbeeOf(String pod) {
        long pid = PodLilbees.holderIn(pod(pod).getMetadata().getUid())
                .orElseThrow(() -> new AssertionError("no lilbee of " + pod + " holds server.lock"));
        return ProcessHandle.of(pid).orElseThrow(() -> new AssertionError("lilbee " + pid + " of " + pod + " gone"));
    }

    /** A pod whose Ready its kubelet may report late, from {@code from} until {@code until} (nanoTime). */
    private record Stale(String pod, long from, long until) {
    }

    /**
     * From now for {@code window}, {@code pod} may still be reported Ready (and a ready endpoint) while another is:
     * hold mode, its warden alone SIGKILLed, the standby takes the lock at once and is Ready at its next probe,
     * while the killed warden's pod stays Ready until its kubelet notices the container gone (it relists every
     * second). docs/modes.md, "When only warden's container restarts".
     */
    public void tolerateStaleReady(String pod, Duration window) {
        long now = System.nanoTime();
        stale.add(new Stale(pod, now, now + window.toNanos()));
    }

    /** From steady, {@code kill} of the serving pod until another pod serves. */
    public Duration failover(String how, Kill kill) throws Exception {
        steady();
        String victim = servingPod();
        long at = System.nanoTime();
        kill.apply(victim);
        try {
            Await.until("another pod serves after " + how, Duration.ofMinutes(2), () -> watch.firstServing(at, victim).isPresent());
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "\n" + wardenLogs(), e);
        }
        return Duration.ofNanos(watch.firstServing(at, victim).orElseThrow() - at);
    }

    /**
     * {@code container} of the serving pod SIGKILLed: the kubelet restarts it in place and the same pod serves
     * again (Ready, the one ready endpoint, and in gate mode a lilbee of it holding server.lock); the time until it
     * does. The kernel is asked as well because readiness is a probe period late: warden back after its permit ran
     * out finds lilbee stopped by its supervisor and starts it again, while the pod may still read Ready.
     */
    public Duration recovers(String how, String serving, String container) throws Exception {
        int restarts = status(pod(serving), container).getRestartCount();
        String uid = pod(serving).getMetadata().getUid();
        long at = System.nanoTime();
        kill(serving, container, "KILL");
        Await.until(container + " restarted", Duration.ofSeconds(60), () -> status(pod(serving), container).getRestartCount() > restarts);
        Await.until("the same pod serves again after " + how, Duration.ofMinutes(6),
                () -> watch.serving().equals(Set.of(serving)) && watch.endpoints().equals(Set.of(serving))
                        && Boolean.TRUE.equals(status(pod(serving), container).getReady())
                        && (lilbees == null || PodLilbees.holderIn(uid).isPresent()));
        return Duration.ofNanos(System.nanoTime() - at);
    }

    /**
     * The serving pod's {@code lilbee serve} process SIGKILLed, not its container: in gate mode lilbee's supervisor starts
     * it again on warden's next word (at once the first time, in its spare prepared process), so the kubelet restarts
     * nothing (no back-off): another lilbee of the same pod holds server.lock and the same pod serves again. Routed by
     * readiness the outage may be shorter than a probe period, so the pod is not required to be seen leaving the Service.
     */
    public Duration lilbeeStartedAgainInPod(String how, String serving) throws Exception {
        int restarts = status(pod(serving), "lilbee").getRestartCount();
        String uid = pod(serving).getMetadata().getUid();
        long killed = lilbeeOf(serving).pid();
        long at = System.nanoTime();
        killLilbee(serving);
        Await.until("another lilbee of " + serving + " holds server.lock after " + how, Duration.ofMinutes(2),
                () -> PodLilbees.holderIn(uid).stream().anyMatch(pid -> pid != killed));
        Await.until("the same pod serves again after " + how, Duration.ofMinutes(2),
                () -> watch.serving().equals(Set.of(serving)) && watch.endpoints().equals(Set.of(serving)));
        if (status(pod(serving), "lilbee").getRestartCount() != restarts) {
            throw new AssertionError("the kubelet restarted lilbee's container: its command should have started lilbee again: "
                    + restartsOf(serving, "lilbee"));
        }
        return Duration.ofNanos(System.nanoTime() - at);
    }

    /** SIGKILL to the {@code lilbee serve} of {@code pod} that holds server.lock (the process, not its container). */
    public void killLilbee(String pod) {
        ProcessHandle lilbee = lilbeeOf(pod);
        if (!lilbee.destroyForcibly()) {
            throw new AssertionError("lilbee " + lilbee.pid() + " of " + pod + " not killed");
        }
    }

    /**
     * From steady, the serving pod hit by {@code kill}: the time until a pod serves again, the same one (its container
     * restarted in place) or another, once the watch saw the hit one leave the Service.
     */
    public Duration servesAgain(Kill kill) throws Exception {
        steady();
        String serving = servingPod();
        long at = System.nanoTime();
        kill.apply(serving);
        Await.until("the pod hit leaves the Service", Duration.ofSeconds(60), () -> watch.firstWithout(at, serving).isPresent());
        long left = watch.firstWithout(at, serving).orElseThrow();
        return Duration.ofNanos(left - at).plus(firstServing(left, Duration.ofMinutes(8)));
    }

    /** From {@code since} (nanoTime) until a pod first served, waiting at most {@code patience}. */
    public Duration firstServing(long since, Duration patience) {
        Await.until("a pod of " + namespace + " serves", patience, () -> watch.firstServing(since, null).isPresent());
        return Duration.ofNanos(watch.firstServing(since, null).orElseThrow() - since);
    }

    /** {@code warden step-down} in {@code pod}'s warden container, as an operator runs it: the gate goes to the standby. */
    public void stepDown(String pod) throws Exception {
        String out = cluster.kubectl().ok(null, "-n", namespace, "exec", pod, "-c", "warden", "--", "warden", "step-down");
        assertTrue(out.contains("stepped down"), out);
    }

    /** What a failure needs to be understood from CI's output alone: each pod's routing, and the end of its warden's log. */
    public String wardenLogs() {
        StringBuilder out = new StringBuilder();
        for (Pod pod : watch.pods().values()) {
            String name = pod.getMetadata().getName();
            out.append("--- ").append(name).append(watch.endpoints().contains(name) ? " routed to" : " not routed to")
                    .append(", warden's log:\n").append(cluster.kubectl().poll("-n", namespace, "logs", "--tail=25", "-c", "warden", name)
                            .orElse("(none)")).append('\n');
        }
        return out.toString();
    }

    /** The reasons of the Events warden recorded on the pods of the namespace, as the API server lists them. */
    public Set<String> wardenEvents() {
        String reasons = cluster.kubectl().poll("-n", namespace, "get", "events", "-o",
                "jsonpath={range .items[?(@.source.component==\"warden\")]}{.reason} {end}").orElse("");
        return new java.util.TreeSet<>(List.of(reasons.trim().split("\\s+")));
    }

    /** A pod deleted as a user or a controller does: SIGTERM, then its grace period. */
    public void delete(String pod) throws Exception {
        cluster.kubectl().ok(null, "-n", namespace, "delete", "pod", pod, "--wait=false");
    }

    public void forceDelete(String pod) throws Exception {
        cluster.kubectl().ok(null, "-n", namespace, "delete", "pod", pod, "--grace-period=0", "--force");
    }

    /** The first process of {@code container} in {@code pod}, as its node's containerd knows it. */
    private long containerPid(String pod, String container) throws IOException, InterruptedException {
        Pod p = pod(pod);
        int node = p.getSpec().getNodeName().equals(NODE1) ? 1 : 2;
        return cluster.containerPid(node, status(p, container).getContainerID());
    }

    /** {@code signal} to the process of {@code container} in {@code pod}, on its node. */
    public void kill(String pod, String container, String signal) throws Exception {
        long pid = containerPid(pod, container);
        Command.ok(null, List.of("kill", "-" + signal, Long.toString(pid)));
    }

    /**
     * The real {@code lilbee reset --yes} in {@code pod}'s lilbee container (its namespaces, UID and environment): the
     * data dir cleared, the gate file and server.lock with it, under its lilbee, which serves on.
     */
    public void lilbeeReset(String pod) throws Exception {
        long pid = containerPid(pod, "lilbee");
        Command.ok(null, List.of("nsenter", "--target", Long.toString(pid), "--all", "--setuid", "1001", "--setgid", "1001",
                "--", "env", "-i", "PATH=/opt/lilbee/bin:/usr/bin:/bin", "HOME=/home/lilbee", "LILBEE_DATA=/var/lib/lilbee",
                "lilbee", "reset", "--yes"));
    }

    /**
     * Hold mode: llama-swap's model loaded in {@code pod}, asked from the pod's network namespace as a client in the pod
     * would: the real llama-server that llama-swap started there for it.
     */
    public ProcessHandle loadModel(String pod) throws Exception {
        long llamaSwap = containerPid(pod, "llama-swap");
        Command.ok(null, List.of("nsenter", "--target", Long.toString(llamaSwap), "--net", "curl", "-sSf", "--max-time", "60",
                "http://127.0.0.1:8080/upstream/" + RealLlamaSwap.MODEL + "/health"));
        return ProcessHandle.of(llamaSwap).orElseThrow().children()
                .filter(p -> p.info().command().orElse("").endsWith("/llama-server")).findFirst()
                .orElseThrow(() -> new AssertionError("no llama-server under the llama-swap of " + pod));
    }

    /** warden's {@code /q/metrics} in {@code pod}, as a scraper reads them: curl in the pod's network namespace. */
    public String metrics(String pod) throws Exception {
        long pid = containerPid(pod, "warden");
        return Command.ok(null, List.of("nsenter", "--target", Long.toString(pid), "--net", "curl", "-sSf", "--max-time", "10",
                "http://127.0.0.1:9096/q/metrics"));
    }

    /** A changed value rolls the Deployment to new pods, one of which serves: the time from the upgrade until it does. */
    public Duration upgradeRollsToNewPods() throws Exception {
        steady();
        Set<String> before = watch.pods().keySet();
        long at = System.nanoTime();
        helm("upgrade", "--wait", "--timeout", "5m", "--set", "podAnnotations.rolled=yes");
        Await.until("a new pod serves", Duration.ofMinutes(3), () -> watch.serving().stream().anyMatch(p -> !before.contains(p)));
        Duration rolled = Duration.ofNanos(System.nanoTime() - at);
        steady();
        return rolled;
    }

    public void helmTest() throws Exception {
        String out = Command.ok(null, List.of(helm, "test", RELEASE, "-n", namespace, "--kubeconfig",
                cluster.kubectl().kubeconfig().toString(), "--logs", "--timeout", "2m"));
        assertTrue(out.contains("Succeeded"), out);
    }

    /**
     * The release as the everyday tools see it, each saying so in its output: {@code kubectl rollout status} of the
     * Deployment (which waits, at most {@code wait}, for every replica available), and kstatus (sigs.k8s.io/cli-utils,
     * what Helm 4's wait and Flux decide by) over the release's live objects; exit code 0 from both when healthy.
     */
    public Command.Run everydayTools(Duration wait) throws Exception {
        Command.Run rollout = cluster.kubectl().run(null, "-n", namespace, "rollout", "status", "deployment/" + FULLNAME,
                "--timeout=" + wait.toSeconds() + "s");
        String manifest = Command.ok(null, List.of(helm, "get", "manifest", RELEASE, "-n", namespace, "--kubeconfig",
                cluster.kubectl().kubeconfig().toString()));
        List<HasMetadata> live = cluster.client().resourceList(manifest).inNamespace(namespace).get();
        Command.Run kstatus = Command.run(cluster.client().getKubernetesSerialization().asJson(new KubernetesListBuilder().withItems(live).build()),
                List.of(InteropTools.path("kubecheck"), "--kstatus", "-"));
        return new Command.Run(rollout.exitCode() | kstatus.exitCode(),
                "kubectl rollout status (" + rollout.exitCode() + "): " + rollout.output() + "kstatus (" + kstatus.exitCode() + "):\n"
                        + kstatus.output());
    }

    /**
     * Never two pods serving, never two ready endpoints, at any event the watch saw (but for a pod's stale Ready
     * {@link #tolerateStaleReady tolerated}); and never two pods whose lilbee holds server.lock, at any look at the
     * kernel (a stalled warden's pod is not Ready, yet its lilbee may serve).
     */
    public void noOverlap() {
        List<ServingWatch.Sample> overlaps = watch.overlaps().stream().filter(sample -> {
            Predicate<String> counted = pod -> stale.stream().noneMatch(t -> t.pod().equals(pod)
                    && sample.at() >= t.from() && sample.at() <= t.until());
            return sample.serving().stream().filter(counted).count() > 1 || sample.endpoints().stream().filter(counted).count() > 1;
        }).toList();
        assertEquals(List.of(), overlaps, "two pods served at once (" + watch.size() + " samples)");
        if (lilbees != null) {
            assertEquals(List.of(), lilbees.overlaps(), "two pods' lilbees held server.lock at once");
        }
    }

    /** Uninstalls; pods a lost node can no longer confirm gone are deleted by force. */
    @Override
    public void close() throws IOException, InterruptedException {
        watch.close();
        if (lilbees != null) {
            lilbees.close();
        }
        Kubectl kubectl = cluster.kubectl();
        if (helm != null) {
            Command.run(null, List.of(helm, "uninstall", RELEASE, "-n", namespace, "--kubeconfig",
                    kubectl.kubeconfig().toString(), "--wait", "--timeout", "90s"));
        }
        kubectl.run(null, "-n", namespace, "delete", "all", "--all", "--grace-period=0", "--force");
        kubectl.run(null, "delete", "namespace", namespace, "--wait=true", "--timeout=90s");
        kubectl.run(null, "delete", "pv", "shared-" + namespace, "--ignore-not-found", "--wait=false");
    }
}
