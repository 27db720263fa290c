package dev.warden.events;

/**
 * A Kubernetes Event on warden's own pod: {@code reason} in UpperCamelCase (what {@code kubectl get events} lists),
 * {@code Warning} or {@code Normal}, and a sentence saying what happened and why.
 */
public record PodEvent(String reason, boolean warning, String message) {

    public static PodEvent normal(String reason, String message) {
        return new PodEvent(reason, false, message);
    }

    public static PodEvent warning(String reason, String message) {
        return new PodEvent(reason, true, message);
    }
}
