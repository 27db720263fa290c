package dev.warden.kube;

import dev.warden.config.SecretFile;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/**
 * How warden reaches the API server. In a pod ({@code KUBERNETES_SERVICE_HOST} set, as the kubelet sets it in every
 * container) only as the service account mounted for warden: a kubeconfig in the pod (planted by another container, or
 * named by {@code $KUBECONFIG}) is never read, and could name a credential plugin warden would run. Outside a pod, the
 * current context of the kubeconfig kubectl would use ({@link Kubeconfig}).
 */
public final class KubernetesAccess {

    /** Where Kubernetes mounts a pod's service account (the chart mounts warden's projected token there). */
    public static final Path SERVICE_ACCOUNT = Path.of("/var/run/secrets/kubernetes.io/serviceaccount");

    private KubernetesAccess() {
    }

    public static ApiServer.Access of(Map<String, String> env, Path account) {
        String host = env.getOrDefault("KUBERNETES_SERVICE_HOST", "").strip();
        if (host.isEmpty()) {
            return Kubeconfig.access(env);
        }
        Path token = account.resolve("token");
        if (!Files.isRegularFile(token)) {
            throw new IllegalStateException("warden runs in a pod (KUBERNETES_SERVICE_HOST is set) but finds no service account"
                    + " token at " + token + ": Lease mode and role routing need one (the chart mounts a projected token for warden"
                    + " alone, with gate.election lease or gate.routing role). In a pod warden reads no kubeconfig.");
        }
        String port = env.getOrDefault("KUBERNETES_SERVICE_PORT", "443").strip();
        URI server = URI.create("https://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + port);
        Path authority = account.resolve("ca.crt");
        Path namespace = account.resolve("namespace");
        // The token is read at each request: the kubelet rotates a projected token in place.
        return new ApiServer.Access(server, Tls.context(Optional.of(secret(authority)), Optional.empty(), authority.toString()),
                () -> Optional.of(secret(token)), Files.isRegularFile(namespace) ? Optional.of(secret(namespace)) : Optional.empty(),
                "the service account at " + account);
    }

    private static String secret(Path file) {
        return SecretFile.required(file, "the service account's " + file.getFileName());
    }
}
