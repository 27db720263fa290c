package dev.warden.testing;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * A real Kubernetes cluster of one or two nodes on this machine ({@code src/test/kubernetes/node-up.sh}):
 * the control plane, kube-proxy, and per node a containerd and a real kubelet, every one a process this
 * class's {@link #close()} stops by pid ({@code node-down.sh}). Node 2 lives in a mount namespace of its
 * own, so a hostPath shows its pods other files than node 1's, as two machines would.
 */
public final class KubeletCluster implements AutoCloseable {

    private static final Path SCRIPTS = Path.of("src/test/kubernetes");

    private final Path state;
    private final Kubectl kubectl;
    private final KubernetesClient client;

    private KubeletCluster(Path state) throws IOException {
        this.state = state;
        Path kubeconfig = state.resolve("pki/admin.kubeconfig");
        this.kubectl = new Kubectl(kubeconfig);
        this.client = new KubernetesClientBuilder().withConfig(Config.fromKubeconfig(Files.readString(kubeconfig))).build();
    }

    /**
     * Starts {@code nodes} nodes from the binaries in {@code tools}, each with the image tarballs in
     * {@code images} imported, keeping state in {@code state} (left by an earlier run: stopped and removed
     * first); returns once every node is Ready, or fails with node-up.sh's reason.
     */
    public static KubeletCluster start(Path tools, Path images, Path state, int nodes) throws IOException, InterruptedException {
        down(state);
        Files.createDirectories(state.getParent());
        Path log = state.resolveSibling(state.getFileName() + "-up.log");
        ProcessBuilder builder = new ProcessBuilder(SCRIPTS.resolve("node-up.sh").toString(), state.toString(),
                tools.toString(), images.toString()).redirectErrorStream(true).redirectOutput(log.toFile());
        Map<String, String> env = builder.environment();
        env.put("NODES", Integer.toString(nodes));
        env.put("ISOLATE", "1");
        int exit = builder.start().waitFor();
        if (exit != 0) {
            String why = Files.readString(log);
            down(state);
            throw new AssertionError("node-up.sh failed (" + exit + "):\n" + why);
        }
        return new KubeletCluster(state);
    }

    public Kubectl kubectl() {
        return kubectl;
    }

    /** A fabric8 client as the cluster's admin: for watches. */
    public KubernetesClient client() {
        return client;
    }

    /** The directory node {@code node}'s pods see at {@link #sharedPath()}. */
    public Path shared(int node) {
        return node == 1 ? state.resolve("shared") : state.resolve("node" + node).resolve("shared");
    }

    /** The path hostPath volumes name: node 1's {@link #shared(int)}, node 2's own directory in its mount namespace. */
    public Path sharedPath() {
        return state.resolve("shared");
    }

    /** The pid, on this machine, of the container {@code containerId} ({@code containerd://...}) runs on {@code node}. */
    public long containerPid(int node, String containerId) throws IOException, InterruptedException {
        String id = containerId.substring(containerId.indexOf("://") + 3);
        String tasks = Command.ok(null, List.of(state.resolve("tools/ctr").toString(), "--address", socket(node).toString(),
                "-n", "k8s.io", "tasks", "ls"));
        return tasks.lines().map(l -> l.trim().split("\\s+")).filter(f -> f.length >= 2 && f[0].equals(id))
                .mapToLong(f -> Long.parseLong(f[1])).findFirst()
                .orElseThrow(() -> new AssertionError("no task " + id + " on node " + node + ":\n" + tasks));
    }

    /**
     * Node {@code node} is lost as a machine is: its kubelet, its containerd, its shims and every process of
     * its pods SIGKILLed at once. The API server still shows its pods as they were until the node controller
     * marks the node unreachable.
     */
    public void loseNode(int node) throws IOException, InterruptedException {
        List<Long> pids = new ArrayList<>();
        for (String name : List.of("kubelet" + node, "containerd" + node)) {
            pids.add(Long.parseLong(Files.readString(state.resolve(name + ".pid")).trim()));
        }
        pids.addAll(podProcesses(node));
        String socket = socket(node).toString();
        ProcessHandle.allProcesses().filter(p -> p.info().commandLine().orElse("").contains("containerd-shim-runc-v2")
                && p.info().commandLine().orElse("").contains(socket)).forEach(p -> pids.add(p.pid()));
        List<String> kill = new ArrayList<>(List.of("kill", "-KILL"));
        pids.forEach(pid -> kill.add(Long.toString(pid)));
        Command.run(null, kill);
    }

    /** Every process in the node's pods' cgroups (node 1's under /kubepods, node 2's under /warden-node2). */
    private List<Long> podProcesses(int node) throws IOException {
        Path root = Path.of("/sys/fs/cgroup/pids").resolve(node == 1 ? "kubepods" : "warden-node" + node);
        if (!Files.isDirectory(root)) {
            return List.of();
        }
        List<Long> pids = new ArrayList<>();
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path procs : walk.filter(p -> p.getFileName().toString().equals("cgroup.procs")).toList()) {
                Files.readAllLines(procs).stream().map(String::trim).filter(l -> !l.isEmpty()).map(Long::parseLong)
                        .forEach(pids::add);
            }
        }
        return pids;
    }

    private Path socket(int node) {
        return state.resolve("node" + node).resolve("containerd/run/containerd.sock");
    }

    /** Stops every process node-up.sh started, by pid, and removes the state. */
    @Override
    public void close() throws IOException, InterruptedException {
        client.close();
        down(state);
    }

    private static void down(Path state) throws IOException, InterruptedException {
        if (Files.exists(state)) {
            Command.Run run = Command.run(null, List.of(SCRIPTS.resolve("node-down.sh").toString(), state.toString(), "--purge"));
            if (run.exitCode() != 0) {
                throw new AssertionError("node-down.sh failed:\n" + run.output());
            }
        }
    }
}
