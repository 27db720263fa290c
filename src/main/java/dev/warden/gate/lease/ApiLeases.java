package dev.warden.gate.lease;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.warden.kube.ApiServer;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Optional;

/**
 * The Lease on the API server: read with a GET, written with a PUT of the object as read with its spec changed (its
 * resourceVersion makes the API server refuse a write over a change this warden has not seen; its labels, annotations
 * and managed fields go back as they came), created with a POST where the Role allows it.
 */
final class ApiLeases implements LeaseStore {

    /** Kubernetes's MicroTime, as client-go writes it. */
    private static final DateTimeFormatter MICRO_TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX");

    private final ApiServer api;
    private final ObjectMapper json;
    private final String namespace;
    private final String name;

    ApiLeases(ApiServer api, ObjectMapper json, String namespace, String name) {
        this.api = api;
        this.json = json;
        this.namespace = namespace;
        this.name = name;
    }

    private String collection() {
        return "/apis/coordination.k8s.io/v1/namespaces/" + namespace + "/leases";
    }

    @Override
    public Optional<Stored> get() throws IOException, InterruptedException, Refused {
        ApiServer.Answer answer = api.get(collection() + "/" + name);
        if (answer.status() == 404) {
            return Optional.empty();
        }
        return Optional.of(stored(answer, "read"));
    }

    @Override
    public Stored create(LeaseRecord record) throws IOException, InterruptedException, Refused {
        ObjectNode lease = json.createObjectNode().put("apiVersion", "coordination.k8s.io/v1").put("kind", "Lease");
        lease.putObject("metadata").put("name", name).put("namespace", namespace);
        write(lease.putObject("spec"), record);
        return stored(api.send("POST", collection(), "application/json", json.writeValueAsString(lease)), "created");
    }

    @Override
    public Stored update(Stored read, LeaseRecord record) throws IOException, InterruptedException, Refused {
        ObjectNode lease = ((ObjectNode) read.version()).deepCopy();
        write(lease.withObjectProperty("spec"), record);
        return stored(api.send("PUT", collection() + "/" + name, "application/json", json.writeValueAsString(lease)), "written");
    }

    @Override
    public String describe() {
        return namespace + "/" + name;
    }

    @Override
    public void close() {
        api.close();
    }

    /** The Lease an answer carries; the API server's refusal (its status and Status message) otherwise. */
    private Stored stored(ApiServer.Answer answer, String what) throws Refused {
        if (!answer.ok()) {
            throw new Refused(answer.status(), what, "the API server refused the Lease " + describe() + " to be " + what + " ("
                    + answer.status() + status(answer.body()) + ")");
        }
        try {
            JsonNode lease = json.readTree(answer.body());
            if (!(lease instanceof ObjectNode object) || !"Lease".equals(lease.path("kind").asText())) {
                throw new Refused(answer.status(), what, "the API server's answer for the Lease " + describe() + " is not a Lease");
            }
            return new Stored(record(object.path("spec")), object);
        } catch (JsonProcessingException e) {
            throw new Refused(answer.status(), what, "the API server's answer for the Lease " + describe() + " is not JSON");
        }
    }

    /** The reason a Status gives, short: it names the API server's own words, never a Lease's content. */
    private String status(String body) {
        try {
            String reason = json.readTree(body).path("reason").asText("");
            return reason.matches("[A-Za-z]{1,64}") ? ", " + reason : "";
        } catch (JsonProcessingException e) {
            return "";
        }
    }

    static LeaseRecord record(JsonNode spec) {
        Optional<String> holder = Optional.ofNullable(spec.get("holderIdentity")).filter(JsonNode::isTextual).map(JsonNode::asText)
                .filter(h -> !h.isEmpty());
        Optional<Duration> duration = Optional.ofNullable(spec.get("leaseDurationSeconds")).filter(JsonNode::canConvertToInt)
                .map(JsonNode::asInt).filter(s -> s > 0).map(Duration::ofSeconds);
        return new LeaseRecord(holder, duration, time(spec.get("acquireTime")), time(spec.get("renewTime")),
                Math.max(0, spec.path("leaseTransitions").asInt(0)));
    }

    private static Optional<Instant> time(JsonNode node) {
        if (node == null || !node.isTextual()) {
            return Optional.empty();
        }
        try {
            return Optional.of(OffsetDateTime.parse(node.asText()).toInstant());
        } catch (DateTimeParseException e) {
            return Optional.empty();
        }
    }

    static void write(ObjectNode spec, LeaseRecord record) {
        if (record.holder().isPresent()) {
            spec.put("holderIdentity", record.holder().get());
        } else {
            spec.put("holderIdentity", "");
        }
        record.duration().ifPresent(d -> spec.put("leaseDurationSeconds", (int) d.toSeconds()));
        record.acquireTime().ifPresent(t -> spec.put("acquireTime", MICRO_TIME.format(t.atOffset(ZoneOffset.UTC))));
        record.renewTime().ifPresent(t -> spec.put("renewTime", MICRO_TIME.format(t.atOffset(ZoneOffset.UTC))));
        spec.put("leaseTransitions", record.transitions());
    }
}
