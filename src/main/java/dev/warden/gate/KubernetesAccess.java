package dev.warden.gate;

import dev.warden.config.SecretFile;
import io.fabric8.kubernetes.client.Config;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * How warden reaches the API server. In a pod ({@code KUBERNETES_SERVICE_HOST} set, as the kubelet sets it
 * in every container) only as the service account mounted for warden: fabric8's own discovery would
 * prefer {@code $KUBECONFIG} or {@code ~/.kube/config}, and a kubeconfig can name an exec credential
 * plugin that warden would run. Outside a pod, as kubectl does.
 */
public final class KubernetesAccess {

    /** Where Kubernetes mounts a pod's service account (the chart mounts warden's projected token there). */
    public static final Path SERVICE_ACCOUNT = Path.of("/var/run/secrets/kubernetes.io/serviceaccount");

    private KubernetesAccess() {
    }

    public static Config config(Map<String, String> env, Path account) {
        String host = env.getOrDefault("KUBERNETES_SERVICE_HOST", "").strip();
        if (host.isEmpty()) {
            return Config.autoConfigure(null);
        }
        Path token = account.resolve("token");
        if (!Files.isRegularFile(token)) {
            throw new IllegalStateException("warden runs in a pod (KUBERNETES_SERVICE_HOST is set) but finds no service account"
                    + " token at " + token + ": Lease mode and role routing need one (the chart mounts a projected token for warden"
                    + " alone, with gate.election lease or gate.routing role). In a pod warden reads no kubeconfig.");
        }
        Config config = Config.empty();
        String port = env.getOrDefault("KUBERNETES_SERVICE_PORT", "443").strip();
        config.setMasterUrl("https://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + port + "/");
        config.setCaCertFile(account.resolve("ca.crt").toString());
        // Read at each request: the kubelet rotates a projected token in place.
        config.setOauthTokenProvider(() -> secret(token));
        Path namespace = account.resolve("namespace");
        if (Files.isRegularFile(namespace)) {
            config.setNamespace(secret(namespace));
        }
        return config;
    }

    private static String secret(Path file) {
        try {
            return SecretFile.read(file).orElseThrow(() -> new IOException(file + " is empty"));
        } catch (IOException e) {
            throw new UncheckedIOException("warden cannot read the service account's " + file.getFileName() + ": "
                    + e.getMessage(), e);
        }
    }
}
