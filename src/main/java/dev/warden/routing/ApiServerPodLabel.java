package dev.warden.routing;

import dev.warden.gate.OwnPod;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The label on warden's own pod, set with a JSON merge patch of its metadata through the service account mounted for
 * warden (the chart's Role allows {@code get} and {@code patch} on pods, nothing else). The answer is read as text,
 * never as a Pod object: warden takes nothing from it but the status.
 */
public final class ApiServerPodLabel implements PodLabel, AutoCloseable {

    /** A label key as Kubernetes takes one: an optional DNS prefix and a name. */
    private static final Pattern KEY = Pattern.compile("([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?");

    private final OwnPod pod;
    private final String key;

    private ApiServerPodLabel(OwnPod pod, String key) {
        this.pod = pod;
        this.key = key;
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
        return new ApiServerPodLabel(OwnPod.connect(pod, namespace, env, timeout, "role routing labels this pod"), key);
    }

    @Override
    public String pod() {
        return pod.describe();
    }

    @Override
    public void set(String value) throws Exception {
        String patch = "{\"metadata\":{\"labels\":{\"" + key + "\":\"" + value + "\"}}}";
        int code = pod.send("PATCH", "/api/v1/namespaces/" + pod.namespace() + "/pods/" + pod.name(),
                "application/merge-patch+json", patch);
        if (code / 100 != 2) {
            String why = switch (code) {
                case 401 -> "the API server does not take warden's token";
                case 403 -> "warden's service account may not patch pods in " + pod.namespace()
                        + ": role routing needs a Role allowing get and patch on pods (the chart's, with gate.routing role)";
                case 404 -> "there is no pod " + pod.name() + " in " + pod.namespace() + ": POD_NAME must name warden's own pod";
                default -> "the API server answered " + code;
            };
            throw new IllegalStateException("cannot label pod " + pod() + " " + key + "=" + value + ": " + why);
        }
    }

    @Override
    public void close() {
        pod.close();
    }
}
