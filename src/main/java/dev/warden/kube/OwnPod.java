package dev.warden.kube;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * warden's own pod as the API server knows it (its name, namespace and, where the downward API gives it, UID), and a
 * client of the service account mounted for warden ({@link KubernetesAccess}), whose requests warden writes itself and
 * whose answers it reads as text: it takes nothing from them but the status.
 *
 * @param uid the pod's UID ({@code $POD_UID}), empty when not given
 */
public record OwnPod(ApiServer api, String namespace, String name, Optional<String> uid)
        implements AutoCloseable {

    private static final Pattern NAME = Pattern.compile("[a-z0-9]([-a-z0-9.]*[a-z0-9])?");

    /**
     * The pod {@code pod} (else {@code $POD_NAME}) in {@code namespace} (else the service account's), for {@code what}
     * ("role routing labels this pod"), each request bounded by {@code timeout}.
     *
     * @throws IllegalArgumentException no pod name, or one Kubernetes would refuse: the message says what to set
     */
    public static OwnPod connect(Optional<String> pod, Optional<String> namespace, Map<String, String> env, Duration timeout,
            String what) {
        String name = pod.or(() -> Optional.ofNullable(env.get("POD_NAME"))).map(String::strip).filter(n -> !n.isEmpty())
                .orElseThrow(() -> new IllegalArgumentException(what + ", but warden does not know its name: set POD_NAME"
                        + " from the downward API (fieldRef metadata.name; the chart does) or warden.gate.role.pod"));
        if (!NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("the pod name " + name + " is not a Kubernetes name");
        }
        ApiServer api = new ApiServer(KubernetesAccess.of(env, KubernetesAccess.SERVICE_ACCOUNT), timeout);
        String in = namespace.or(api::namespace).orElse("default");
        Optional<String> uid = Optional.ofNullable(env.get("POD_UID")).map(String::strip).filter(u -> u.matches("[-0-9a-f]{1,64}"));
        return new OwnPod(api, in, name, uid);
    }

    /** {@code namespace/name}. */
    public String describe() {
        return namespace + "/" + name;
    }

    /** Sends {@code body} ({@code contentType}) with {@code method} to {@code path} under the API server; the status code. */
    public int send(String method, String path, String contentType, String body) throws Exception {
        return api.send(method, path, contentType, body).status();
    }

    @Override
    public void close() {
        api.close();
    }
}
