package dev.warden.routing;

import dev.warden.gate.KubernetesAccess;
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
 * The label on warden's own pod, set with a JSON merge patch of its metadata through the service account mounted for
 * warden (the chart's Role allows {@code get} and {@code patch} on pods, nothing else). The answer is read as text,
 * never as a Pod object: warden takes nothing from it but the status.
 */
public final class ApiServerPodLabel implements PodLabel, AutoCloseable {

    /** A label key as Kubernetes takes one: an optional DNS prefix and a name. */
    private static final Pattern KEY = Pattern.compile("([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?");
    private static final Pattern NAME = Pattern.compile("[a-z0-9]([-a-z0-9.]*[a-z0-9])?");

    private final KubernetesClient client;
    private final String key;
    private final String namespace;
    private final String pod;
    private final Duration timeout;

    private ApiServerPodLabel(KubernetesClient client, String key, String namespace, String pod, Duration timeout) {
        this.client = client;
        this.key = key;
        this.namespace = namespace;
        this.pod = pod;
        this.timeout = timeout;
    }

    /**
     * The label {@code key} of pod {@code pod} (else {@code $POD_NAME}) in {@code namespace} (else the service account's).
     *
     * @throws IllegalArgumentException no pod name, or a key or name Kubernetes would refuse: the message says which
     */
    public static ApiServerPodLabel connect(String key, Optional<String> pod, Optional<String> namespace,
            Map<String, String> env, Duration timeout) {
        if (!KEY.matcher(key).matches() || key.length() > 316) {
            throw new IllegalArgumentException("warden.gate.role.label " + key + " is not a Kubernetes label key");
        }
        String name = pod.or(() -> Optional.ofNullable(env.get("POD_NAME"))).map(String::strip).filter(n -> !n.isEmpty())
                .orElseThrow(() -> new IllegalArgumentException("role routing labels this pod, but warden does not know its"
                        + " name: set POD_NAME from the downward API (fieldRef metadata.name; the chart does) or"
                        + " warden.gate.role.pod"));
        if (!NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("the pod name " + name + " is not a Kubernetes name");
        }
        Config config = KubernetesAccess.config(env, KubernetesAccess.SERVICE_ACCOUNT);
        config.setRequestTimeout((int) timeout.toMillis());
        config.setConnectionTimeout((int) timeout.toMillis());
        config.setRequestRetryBackoffLimit(0);
        String in = namespace.or(() -> Optional.ofNullable(config.getNamespace())).orElse("default");
        KubernetesClient client = new KubernetesClientBuilder().withConfig(config).withHttpClientFactory(new JdkHttpClientFactory())
                .build();
        return new ApiServerPodLabel(client, key, in, name, timeout);
    }

    @Override
    public String pod() {
        return namespace + "/" + pod;
    }

    @Override
    public void set(String value) throws Exception {
        String patch = "{\"metadata\":{\"labels\":{\"" + key + "\":\"" + value + "\"}}}";
        HttpRequest request = client.getHttpClient().newHttpRequestBuilder()
                .uri(client.getMasterUrl().toString().replaceAll("/*$", "") + "/api/v1/namespaces/" + namespace + "/pods/" + pod)
                .method("PATCH", "application/merge-patch+json", patch).build();
        HttpResponse<String> response = client.getHttpClient().sendAsync(request, String.class)
                .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        if (response.code() / 100 != 2) {
            String why = switch (response.code()) {
                case 401 -> "the API server does not take warden's token";
                case 403 -> "warden's service account may not patch pods in " + namespace
                        + ": role routing needs a Role allowing get and patch on pods (the chart's, with gate.routing role)";
                case 404 -> "there is no pod " + pod + " in " + namespace + ": POD_NAME must name warden's own pod";
                default -> "the API server answered " + response.code();
            };
            throw new IllegalStateException("cannot label pod " + pod() + " " + key + "=" + value + ": " + why);
        }
    }

    @Override
    public void close() {
        client.close();
    }
}
