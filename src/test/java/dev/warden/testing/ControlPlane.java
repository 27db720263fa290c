package dev.warden.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A real Kubernetes control plane on loopback: etcd, kube-apiserver (RBAC, PodSecurity admission,
 * certificates made here with openssl) and kube-controller-manager, so that Deployments really make
 * ReplicaSets and Pods and admission judges the pods themselves. There is no kubelet: pods stay
 * Pending. Binaries from {@code src/test/kubernetes/build-control-plane.sh}; kubectl from the PATH.
 * Every process is stopped by {@link #close()}.
 */
public final class ControlPlane implements AutoCloseable {

    private final Path work;
    private final List<Process> processes = new ArrayList<>();
    private final Path kubeconfig;
    private final Kubectl kubectl;

    private ControlPlane(Path work) {
        this.work = work;
        this.kubeconfig = work.resolve("kubeconfig");
        this.kubectl = new Kubectl(kubeconfig);
    }

    /** Starts the control plane from the binaries in {@code bin}, keeping its state in {@code work}; returns once it is ready. */
    public static ControlPlane start(Path bin, Path work) throws IOException, InterruptedException {
        ControlPlane plane = new ControlPlane(work);
        try {
            plane.boot(bin);
        } catch (IOException | InterruptedException | RuntimeException | AssertionError e) {
            plane.close();
            throw e;
        }
        return plane;
    }

    private void boot(Path bin) throws IOException, InterruptedException {
        Path pki = Files.createDirectories(work.resolve("pki"));
        openssl(pki, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
                "-subj", "/CN=warden-test-ca");
        certificate(pki, "apiserver", "/CN=kube-apiserver",
                "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth");
        certificate(pki, "admin", "/O=system:masters/CN=warden-test-admin", "extendedKeyUsage=clientAuth");
        certificate(pki, "kcm", "/CN=system:kube-controller-manager", "extendedKeyUsage=clientAuth");
        openssl(pki, "genrsa", "-out", "sa.key", "2048");
        openssl(pki, "rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub");

        int etcdPort = FakeEngine.freePort();
        int etcdPeerPort = FakeEngine.freePort();
        int apiPort = FakeEngine.freePort();
        int kcmPort = FakeEngine.freePort();
        String etcdUrl = "http://127.0.0.1:" + etcdPort;
        String peerUrl = "http://127.0.0.1:" + etcdPeerPort;
        launch("etcd", bin.resolve("etcd").toString(), "--name", "test", "--data-dir", work.resolve("etcd").toString(),
                "--listen-client-urls", etcdUrl, "--advertise-client-urls", etcdUrl, "--listen-peer-urls", peerUrl,
                "--initial-advertise-peer-urls", peerUrl, "--initial-cluster", "test=" + peerUrl, "--initial-cluster-state", "new");
        launch("kube-apiserver", bin.resolve("kube-apiserver").toString(), "--etcd-servers=" + etcdUrl,
                "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + apiPort,
                "--endpoint-reconciler-type=none", "--tls-cert-file=" + pki.resolve("apiserver.crt"),
                "--tls-private-key-file=" + pki.resolve("apiserver.key"), "--client-ca-file=" + pki.resolve("ca.crt"),
                "--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file=" + pki.resolve("sa.pub"),
                "--service-account-signing-key-file=" + pki.resolve("sa.key"), "--api-audiences=https://kubernetes.default.svc",
                "--service-cluster-ip-range=10.96.0.0/24", "--authorization-mode=RBAC", "--allow-privileged=false",
                "--profiling=false", "--cert-dir=" + work.resolve("apiserver-certs"));

        String server = "https://127.0.0.1:" + apiPort;
        kubeconfig(kubeconfig, server, pki, "admin");
        Path kcmConfig = work.resolve("kcm.kubeconfig");
        kubeconfig(kcmConfig, server, pki, "kcm");
        Await.until("kube-apiserver is ready", () -> {
            alive();
            return poll("get", "--raw", "/readyz").isPresent();
        });
        launch("kube-controller-manager", bin.resolve("kube-controller-manager").toString(), "--kubeconfig=" + kcmConfig,
                "--authentication-kubeconfig=" + kcmConfig, "--authorization-kubeconfig=" + kcmConfig,
                "--bind-address=127.0.0.1", "--secure-port=" + kcmPort, "--cert-dir=" + work.resolve("kcm-certs"),
                "--leader-elect=false", "--service-account-private-key-file=" + pki.resolve("sa.key"),
                "--root-ca-file=" + pki.resolve("ca.crt"), "--use-service-account-credentials=true", "--controllers=*");
    }

    /** A namespace whose pods PodSecurity judges at {@code restricted} (enforced, and warned of on apply); returns once its default ServiceAccount exists. */
    public void restrictedNamespace(String name) throws IOException, InterruptedException {
        ok(null, "create", "namespace", name);
        ok(null, "label", "namespace", name, "pod-security.kubernetes.io/enforce=restricted",
                "pod-security.kubernetes.io/warn=restricted", "pod-security.kubernetes.io/audit=restricted");
        Await.until("the default ServiceAccount of " + name, () -> poll("-n", name, "get", "serviceaccount", "default").isPresent());
    }

    /** kubectl against this control plane, {@code stdin} (may be null) fed to it. */
    public Command.Run kubectl(String stdin, String... args) throws IOException, InterruptedException {
        return kubectl.run(stdin, args);
    }

    /** kubectl, which must succeed. */
    public String ok(String stdin, String... args) throws IOException, InterruptedException {
        return kubectl.ok(stdin, args);
    }

    /** kubectl's output when it succeeds; empty when it fails or cannot run: for waiting on a condition. */
    public Optional<String> poll(String... args) {
        return kubectl.poll(args);
    }

    /**
     * Freezes kube-apiserver (SIGSTOP): connections are accepted by the kernel and never answered, the
     * harder way for an API server to go away. {@link #resumeApiServer()} thaws it.
     */
    public void pauseApiServer() throws IOException, InterruptedException {
        signalApiServer("-STOP");
    }

    public void resumeApiServer() throws IOException, InterruptedException {
        signalApiServer("-CONT");
    }

    private void signalApiServer(String signal) throws IOException, InterruptedException {
        Process apiServer = processes.stream().filter(p -> p.info().command().orElse("").endsWith("kube-apiserver"))
                .findFirst().orElseThrow();
        Command.ok(null, List.of("kill", signal, Long.toString(apiServer.pid())));
    }

    /** The kubeconfig of a cluster admin, for helm and kubectl. */
    public Path kubeconfig() {
        return kubeconfig;
    }

    /**
     * A kubeconfig of ServiceAccount {@code account} of {@code namespace} (a token made for it now): the admin's cluster
     * with that token in place of the admin's certificate, so that only the account's Role allows anything.
     */
    public Path kubeconfigOf(String namespace, String account) throws IOException, InterruptedException {
        return kubeconfigOf(namespace, account, null);
    }

    /**
     * The same with a token bound to pod {@code pod} (null: none), as a projected token in that pod is: the API server
     * then names the pod in the request's user (extra {@code authentication.kubernetes.io/pod-name}).
     */
    public Path kubeconfigOf(String namespace, String account, String pod) throws IOException, InterruptedException {
        List<String> create = new ArrayList<>(List.of("create", "token", "-n", namespace, account));
        if (pod != null) {
            create.addAll(List.of("--bound-object-kind", "Pod", "--bound-object-name", pod));
        }
        String token = ok(null, create.toArray(String[]::new)).trim();
        String admin = Files.readString(kubeconfig);
        String server = admin.lines().filter(l -> l.trim().startsWith("server:")).findFirst().orElseThrow().trim();
        String ca = admin.lines().filter(l -> l.trim().startsWith("certificate-authority")).findFirst().orElseThrow().trim();
        Path config = Files.createTempFile(work, account, ".kubeconfig");
        Files.writeString(config, String.join("\n", "apiVersion: v1", "kind: Config", "clusters:",
                "- name: test", "  cluster:", "    " + server, "    " + ca, "users:", "- name: " + account,
                "  user:", "    token: " + token, "contexts:", "- name: " + account, "  context:", "    cluster: test",
                "    user: " + account, "    namespace: " + namespace, "current-context: " + account, ""));
        return config;
    }

    private void launch(String name, String... command) throws IOException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(work.resolve(name + ".log").toFile()).start();
        processes.add(process);
    }

    private void alive() {
        for (Process process : processes) {
            if (!process.isAlive()) {
                String name = process.info().command().orElse("a control-plane process");
                throw new AssertionError(name + " exited with " + process.exitValue() + "; logs in " + work);
            }
        }
    }

    private void kubeconfig(Path file, String server, Path pki, String user) throws IOException, InterruptedException {
        for (List<String> args : List.of(
                List.of("config", "set-cluster", "test", "--server=" + server, "--certificate-authority=" + pki.resolve("ca.crt"),
                        "--embed-certs"),
                List.of("config", "set-credentials", user, "--client-certificate=" + pki.resolve(user + ".crt"),
                        "--client-key=" + pki.resolve(user + ".key"), "--embed-certs"),
                List.of("config", "set-context", "test", "--cluster=test", "--user=" + user),
                List.of("config", "use-context", "test"))) {
            List<String> command = new ArrayList<>(List.of("kubectl", "--kubeconfig=" + file));
            command.addAll(args);
            Command.ok(null, command);
        }
    }

    private static void certificate(Path pki, String name, String subject, String extensions) throws IOException, InterruptedException {
        openssl(pki, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out", name + ".csr", "-subj", subject);
        Files.writeString(pki.resolve(name + ".ext"), extensions + "\n");
        openssl(pki, "x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
                "-out", name + ".crt", "-extfile", name + ".ext");
    }

    private static void openssl(Path dir, String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("openssl"));
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (process.waitFor() != 0) {
            throw new IOException(String.join(" ", command) + ": " + out);
        }
    }


    /** Stops the controller manager, the API server and etcd, in that order, by pid. */
    @Override
    public void close() throws InterruptedException {
        for (Process process : processes.reversed()) {
            process.destroy();
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }
}
