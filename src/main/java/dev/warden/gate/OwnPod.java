package dev.warden.gate;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.http.HttpRequest;
import io.fabric8.kubernetes.client.http.HttpResponse;
import io.fabric8.kubernetes.client.jdkhttp.JdkHttpClientFactory;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * warden's own pod as the API server knows it (its name, namespace and, where the downward API gives it, UID), and a
 * client of the service account mounted for warden ({@link KubernetesAccess}), whose requests warden writes itself and
 * whose answers it reads as text: it takes nothing from them but the status.
 *
 * @param uid the pod's UID ({@code $POD_UID}), empty when not given
 */
public record OwnPod(KubernetesClient client, String namespace, String name, Optional<String> uid, Duration timeout)
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
        Config config = KubernetesAccess.config(env, KubernetesAccess.SERVICE_ACCOUNT);
        config.setRequestTimeout((int) timeout.toMillis());
        config.setConnectionTimeout((int) timeout.toMillis());
        config.setRequestRetryBackoffLimit(0);
        String in = namespace.or(() -> Optional.ofNullable(config.getNamespace())).orElse("default");
        Optional<String> uid = Optional.ofNullable(env.get("POD_UID")).map(String::strip).filter(u -> u.matches("[-0-9a-f]{1,64}"));
        KubernetesClient client = new KubernetesClientBuilder().withConfig(config).withHttpClientFactory(new JdkHttpClientFactory())
                .build();
        return new OwnPod(client, in, name, uid, timeout);
    }

    /** {@code namespace/name}. */
    public String describe() {
        return namespace + "/" + name;
    }

    /** Sends {@code body} ({@code contentType}) with {@code method} to {@code path} under the API server; the status code. */
    public int send(String method, String path, String contentType, String body) throws Exception {
        HttpRequest request = client.getHttpClient().newHttpRequestBuilder()
                .uri(client.getMasterUrl().toString().replaceAll("/*$", "") + path).method(method, contentType, body).build();
        HttpResponse<String> response = client.getHttpClient().sendAsync(request, String.class)
                .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        return response.code();
    }

    @Override
    public void close() {
        client.close();
    }
}
