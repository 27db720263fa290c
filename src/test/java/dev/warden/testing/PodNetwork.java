package dev.warden.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A pod's network, as a kubelet node has it: a network namespace of its own (held by a sleeping process
 * that {@code unshare --net} started), its loopback up, and a veth pair to this namespace, which plays
 * the node. Processes entered into it ({@link #enter()}) are the pod's containers; the test, on the node's
 * side, connects from {@link #nodeAddress()} as the kubelet would. Nothing listens on this machine's own
 * interfaces. Needs root; closing kills the holder by pid, and the namespace and both veth ends go with
 * it once the pod's processes have ended.
 */
public final class PodNetwork implements AutoCloseable {

    private static final AtomicInteger COUNT = new AtomicInteger();

    private final Process holder;
    private final int number;
    private final String nodeSide;
    private final String nodeAddress;
    private final String podAddress;

    private PodNetwork(Process holder, int number, String nodeSide, String nodeAddress, String podAddress) {
        this.holder = holder;
        this.number = number;
        this.nodeSide = nodeSide;
        this.nodeAddress = nodeAddress;
        this.podAddress = podAddress;
    }

    public static PodNetwork create() throws IOException, InterruptedException {
        Process holder = new ProcessBuilder("unshare", "--net", "--", "sleep", "3600").redirectErrorStream(true)
                .redirectOutput(WardenProcess.logFile("pod-network").toFile()).start();
        try {
            long pid = holder.pid();
            Await.until("the pod's network namespace exists", () -> {
                String ns = namespace(pid);
                return !ns.isEmpty() && !ns.equals(namespace(ProcessHandle.current().pid()));
            });
            // A /30 of 10.231.0.0/16 per pod, apart for each test process and pod.
            int n = (int) ((ProcessHandle.current().pid() * 16 + COUNT.incrementAndGet()) % 16384);
            String prefix = "10.231." + (n / 64) + ".";
            String node = prefix + (n % 64 * 4 + 1);
            String pod = prefix + (n % 64 * 4 + 2);
            String nodeSide = "wdn" + pid;
            String podSide = "wdp" + pid;
            run("ip", "link", "add", nodeSide, "type", "veth", "peer", "name", podSide, "netns", Long.toString(pid));
            run("ip", "addr", "add", node + "/30", "dev", nodeSide);
            run("ip", "link", "set", nodeSide, "up");
            String enter = "--net=/proc/" + pid + "/ns/net";
            run("nsenter", enter, "ip", "link", "set", "lo", "up");
            run("nsenter", enter, "ip", "addr", "add", pod + "/30", "dev", podSide);
            run("nsenter", enter, "ip", "link", "set", podSide, "up");
            // As a pod's: everything else through the node, whose end of the link is the pod's gateway.
            run("nsenter", enter, "ip", "route", "add", "default", "via", node);
            return new PodNetwork(holder, n, nodeSide, node, pod);
        } catch (IOException | InterruptedException | RuntimeException | Error e) {
            holder.destroyForcibly();
            throw e;
        }
    }

    private static String namespace(long pid) {
        try {
            return Files.readSymbolicLink(Path.of("/proc/" + pid + "/ns/net")).toString();
        } catch (IOException e) {
            return "";
        }
    }

    private static void run(String... command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes());
        if (!process.waitFor(10, TimeUnit.SECONDS) || process.exitValue() != 0) {
            throw new IOException(String.join(" ", command) + " failed: " + output);
        }
    }

    /** The command prefix that runs what follows inside the pod's network namespace. */
    public List<String> enter() {
        return List.of("nsenter", "--net=/proc/" + holder.pid() + "/ns/net", "--");
    }

    /** The pod's address, on its side of the veth pair. */
    public String podAddress() {
        return podAddress;
    }

    /** The node's address, from which the test's probes come. */
    public String nodeAddress() {
        return nodeAddress;
    }

    /**
     * {@code count} (at most 254) addresses of other peers, as other pods of the node would connect from: each on the
     * node's end of the link, reached from the pod through its gateway. They go with the link when the pod does.
     */
    public List<String> otherPeers(int count) throws IOException, InterruptedException {
        if (count < 1 || count > 254) {
            throw new IllegalArgumentException("1 to 254 other peers, not " + count);
        }
        List<String> peers = new ArrayList<>();
        for (int host = 1; host <= count; host++) {
            // 10.160.0.0 to 10.223.255.255: one /24 per pod, apart from the pods' own /30s.
            String peer = "10." + (160 + number / 256) + "." + (number % 256) + "." + host;
            run("ip", "addr", "add", peer + "/32", "dev", nodeSide);
            peers.add(peer);
        }
        return peers;
    }

    @Override
    public void close() throws InterruptedException {
        holder.destroyForcibly();
        holder.waitFor(10, TimeUnit.SECONDS);
    }
}
