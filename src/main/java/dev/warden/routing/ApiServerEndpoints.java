package dev.warden.routing;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.warden.kube.OwnPod;
import dev.warden.kube.ApiServer;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The Service's Endpoints (core v1) on the API server: read with a GET, written with a PUT of the object as read with its
 * subsets changed (its resourceVersion makes the API server refuse a write over a change this warden has not seen; its
 * labels and annotations go back as they came, but for the endpoints controller's marks, which keep the mirroring
 * controller off an Endpoints it made while the Service selected pods). An Endpoints routes the Service of its own name and no other, and the
 * chart's Role names it: a stolen token routes that one Service (an EndpointSlice joins whichever Service its label
 * names, a label its writer sets). kube-controller-manager's EndpointSlice mirroring controller makes the slices
 * kube-proxy reads from it.
 *
 * <p>This pod's address goes in with the pod as its target and the node it runs on, as the endpoints controller writes a
 * pod, so that {@code kubectl get endpointslices} and the kubelet tests name it.
 */
public final class ApiServerEndpoints implements ServiceEndpoints, AutoCloseable {

    /** A Service port's name, and the number it is served on here: {@code http=7433}. */
    public record Port(String name, int port) {

        private static final Pattern NAME = Pattern.compile("[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?");

        /**
         * @throws IllegalArgumentException not {@code name=port}: the message says what is expected
         */
        public static Port of(String text) {
            String[] parts = text.strip().split("=", 2);
            try {
                int port = Integer.parseInt(parts.length == 2 ? parts[1].strip() : "");
                if (NAME.matcher(parts[0].strip()).matches() && port > 0 && port < 65536) {
                    return new Port(parts[0].strip(), port);
                }
            } catch (NumberFormatException e) {
                // said below
            }
            throw new IllegalArgumentException("warden.gate.role.ports takes name=port entries, a Service port's name and"
                    + " the port it is served on in this pod (http=7433,api=8080), not " + text.strip());
        }
    }

    private static final Pattern NAME = Pattern.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
    /** A node's name: a DNS subdomain. */
    private static final Pattern NODE = Pattern.compile("[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?");
    private static final String SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror";
    private static final String MANAGED_BY = "endpoints.kubernetes.io/managed-by";
    private static final Pattern ADDRESS = Pattern.compile("[0-9a-fA-F.:]{2,45}");

    private final OwnPod pod;
    private final ObjectMapper json;
    private final String name;
    private final List<Port> ports;
    private final String own;
    private final Optional<String> node;

    private ApiServerEndpoints(OwnPod pod, ObjectMapper json, String name, List<Port> ports, String own, Optional<String> node) {
        this.pod = pod;
        this.json = json;
        this.name = name;
        this.ports = ports;
        this.own = own;
        this.node = node;
    }

    /**
     * The Endpoints {@code name} in warden's pod's namespace, routing {@code ports} to {@code address} (this pod's).
     *
     * @throws IllegalArgumentException a name, port or address Kubernetes would refuse: the message says which
     */
    public static ApiServerEndpoints of(OwnPod pod, ObjectMapper json, String name, List<Port> ports, String address,
            Optional<String> node) {
        if (!NAME.matcher(name).matches() || name.length() > 63) {
            throw new IllegalArgumentException("warden.gate.role.endpoints " + name + " is not a Service's name");
        }
        if (ports.isEmpty()) {
            throw new IllegalArgumentException("warden.gate.role.ports is empty: name the Service's ports and the port"
                    + " each is served on in this pod (http=7433,api=8080; the chart does)");
        }
        if (!ADDRESS.matcher(address).matches()) {
            throw new IllegalArgumentException("warden.gate.role.address " + address + " is not an IP address");
        }
        return new ApiServerEndpoints(pod, json, name, List.copyOf(ports), address, node.filter(n -> NODE.matcher(n).matches()));
    }

    @Override
    public String describe() {
        return pod.namespace() + "/" + name;
    }

    @Override
    public String own() {
        return own;
    }

    private String path() {
        return "/api/v1/namespaces/" + pod.namespace() + "/endpoints/" + name;
    }

    @Override
    public Routed read() throws Exception {
        return routed(pod.api().get(path()), "read");
    }

    @Override
    public Routed write(Routed read, Set<String> addresses) throws Exception {
        ObjectNode endpoints = ((ObjectNode) read.version()).deepCopy();
        endpoints.set("subsets", addresses.contains(own) ? ownSubsets() : kept(endpoints.path("subsets"), addresses));
        // The endpoints controller's marks, on an Endpoints it made while the Service still selected pods (a release
        // routed by readiness before): the mirroring controller makes no EndpointSlice of one that carries them.
        if (endpoints.path("metadata").path("labels") instanceof ObjectNode labels) {
            labels.remove(List.of(SKIP_MIRROR, MANAGED_BY));
        }
        return routed(pod.api().send("PUT", path(), "application/json", json.writeValueAsString(endpoints)), "written");
    }

    /** Of {@code subsets}, the addresses in {@code addresses} alone, each subset with its ports; none left, no subset. */
    private ArrayNode kept(JsonNode subsets, Set<String> addresses) {
        ArrayNode kept = json.createArrayNode();
        for (JsonNode subset : subsets) {
            ArrayNode staying = json.createArrayNode();
            subset.path("addresses").forEach(a -> {
                if (addresses.contains(a.path("ip").asText())) {
                    staying.add(a);
                }
            });
            if (!staying.isEmpty()) {
                ObjectNode copy = ((ObjectNode) subset).deepCopy();
                copy.set("addresses", staying);
                copy.remove("notReadyAddresses");
                kept.add(copy);
            }
        }
        return kept;
    }

    @Override
    public boolean asWritten(Routed read) {
        return ((JsonNode) read.version()).path("subsets").equals(ownSubsets());
    }

    /** The subsets that route to this pod alone: its address, node and pod, and the Service's ports. */
    private ArrayNode ownSubsets() {
        ArrayNode subsets = json.createArrayNode();
        ObjectNode subset = subsets.addObject();
        ObjectNode address = subset.putArray("addresses").addObject().put("ip", own);
        node.ifPresent(n -> address.put("nodeName", n));
        address.putObject("targetRef").put("kind", "Pod").put("namespace", pod.namespace()).put("name", pod.name());
        ArrayNode served = subset.putArray("ports");
        ports.forEach(port -> served.addObject().put("name", port.name()).put("port", port.port()).put("protocol", "TCP"));
        return subsets;
    }

    /** The Endpoints an answer carries; else why not, and what to do. */
    private Routed routed(ApiServer.Answer answer, String what) throws JsonProcessingException, Changed {
        if (answer.status() == 409) {
            throw new Changed("the Endpoints " + describe() + " changed since warden read it");
        }
        if (!answer.ok()) {
            String why = switch (answer.status()) {
                case 401 -> "the API server does not take warden's token";
                case 403 -> "warden's service account may not have it " + what + ": role routing needs a Role allowing get"
                        + " and update on that one Endpoints (the chart's, with gate.routing role)";
                case 404 -> "there is none: the chart creates it with the Service (gate.routing role), named as the Service"
                        + " (warden.gate.role.endpoints)";
                default -> "the API server answered " + answer.status();
            };
            throw new IllegalStateException("the Endpoints " + describe() + " could not be " + what + ": " + why);
        }
        JsonNode endpoints = json.readTree(answer.body());
        if (!endpoints.isObject() || !"Endpoints".equals(endpoints.path("kind").asText())) {
            throw new IllegalStateException("the API server's answer for the Endpoints " + describe() + " is not an Endpoints");
        }
        Set<String> addresses = new LinkedHashSet<>();
        for (JsonNode subset : endpoints.path("subsets")) {
            subset.path("addresses").forEach(a -> addresses.add(a.path("ip").asText()));
        }
        return new Routed(Set.copyOf(addresses), endpoints);
    }

    @Override
    public void close() {
        pod.close();
    }
}
