package dev.warden.kube;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.warden.config.SecretFile;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Outside a pod, the API server and credentials of a kubeconfig's current context, found as kubectl finds them: the
 * files {@code $KUBECONFIG} lists (the first to name a context, cluster or user wins), else {@code ~/.kube/config}.
 * A bearer token (inline or {@code tokenFile}, read at each request) or a client certificate; never a credential
 * plugin ({@code exec}, {@code auth-provider}), which warden does not run, nor a cluster whose certificate it would not
 * check.
 */
final class Kubeconfig {

    private static final int MAX_BYTES = 1024 * 1024;

    private Kubeconfig() {
    }

    static ApiServer.Access access(Map<String, String> env) {
        List<Path> files = files(env);
        List<Entry> configs = new ArrayList<>();
        for (Path file : files) {
            if (Files.isRegularFile(file)) {
                configs.add(new Entry(file, read(file)));
            }
        }
        if (configs.isEmpty()) {
            throw new IllegalStateException("warden runs outside a pod (KUBERNETES_SERVICE_HOST is not set) and finds no kubeconfig"
                    + " at " + files + ": set KUBECONFIG, or run warden in a pod with a service account");
        }
        String name = first(configs, c -> text(c.node(), "current-context")).orElseThrow(() -> new IllegalStateException(
                "the kubeconfig " + files + " names no current-context: kubectl config use-context NAME"));
        JsonNode context = named(configs, "contexts", "context", name, files).node();
        Entry cluster = named(configs, "clusters", "cluster", text(context, "cluster").orElse(""), files);
        Entry user = named(configs, "users", "user", text(context, "user").orElse(""), files);
        String where = "the kubeconfig " + files + ", context " + name;
        if (cluster.node().path("insecure-skip-tls-verify").asBoolean(false)) {
            throw new IllegalStateException(where + ": its cluster skips TLS verification, which warden does not do: give it"
                    + " certificate-authority or certificate-authority-data");
        }
        for (String plugin : List.of("exec", "auth-provider", "username")) {
            if (user.node().has(plugin)) {
                throw new IllegalStateException(where + ": its user authenticates by " + plugin + ", which warden does not use: give"
                        + " it a token, tokenFile or client certificate (kubectl create token ACCOUNT)");
            }
        }
        URI server = URI.create(text(cluster.node(), "server")
                .orElseThrow(() -> new IllegalStateException(where + ": its cluster has no server")));
        Optional<String> authority = material(cluster, "certificate-authority");
        Optional<Tls.ClientCertificate> client = material(user, "client-certificate")
                .map(certificate -> new Tls.ClientCertificate(certificate, material(user, "client-key")
                        .orElseThrow(() -> new IllegalStateException(where + ": its user has a client certificate but no client key"))));
        Supplier<Optional<String>> token = text(user.node(), "token").map(t -> (Supplier<Optional<String>>) () -> Optional.of(t))
                .or(() -> text(user.node(), "tokenFile")
                        .map(f -> () -> Optional.of(SecretFile.required(user.resolve(f), "the kubeconfig's tokenFile"))))
                .orElse(Optional::empty);
        return new ApiServer.Access(server, Tls.context(authority, client, where), token, text(context, "namespace"), where);
    }

    private static List<Path> files(Map<String, String> env) {
        String listed = env.getOrDefault("KUBECONFIG", "").strip();
        if (!listed.isEmpty()) {
            return java.util.Arrays.stream(listed.split(":")).filter(s -> !s.isBlank()).map(Path::of).toList();
        }
        return List.of(Path.of(env.getOrDefault("HOME", System.getProperty("user.home")), ".kube", "config"));
    }

    private static JsonNode read(Path file) {
        try (InputStream in = Files.newInputStream(file)) {
            byte[] bytes = in.readNBytes(MAX_BYTES + 1);
            if (bytes.length > MAX_BYTES) {
                throw new IllegalStateException("the kubeconfig " + file + " is over " + MAX_BYTES + " bytes");
            }
            JsonNode node = new ObjectMapper(new YAMLFactory()).readTree(bytes);
            if (node == null || !node.isObject()) {
                throw new IllegalStateException("the kubeconfig " + file + " is not a kubeconfig (no mapping at its top)");
            }
            return node;
        } catch (IOException e) {
            throw new IllegalStateException("warden cannot read the kubeconfig " + file + ": " + e.getClass().getSimpleName(), e);
        }
    }

    /** A kubeconfig file, or an entry of one: relative paths in it are relative to the file. */
    private record Entry(Path file, JsonNode node) {

        Path resolve(String name) {
            Path path = Path.of(name);
            Path dir = file.toAbsolutePath().getParent();
            return path.isAbsolute() || dir == null ? path : dir.resolve(path);
        }
    }

    private static <T> Optional<T> first(List<Entry> configs, java.util.function.Function<Entry, Optional<T>> find) {
        return configs.stream().map(find).flatMap(Optional::stream).findFirst();
    }

    /** The first entry {@code name} of the list {@code list} in any of {@code configs}: its {@code field}. */
    private static Entry named(List<Entry> configs, String list, String field, String name, List<Path> files) {
        return first(configs, c -> {
            for (JsonNode entry : c.node().path(list)) {
                if (name.equals(entry.path("name").asText(null)) && entry.path(field).isObject()) {
                    return Optional.of(new Entry(c.file(), entry.path(field)));
                }
            }
            return Optional.empty();
        }).orElseThrow(() -> new IllegalStateException("the kubeconfig " + files + " has no " + field + " named '" + name + "'"));
    }

    private static Optional<String> text(JsonNode node, String field) {
        return Optional.ofNullable(node.get(field)).filter(JsonNode::isTextual).map(JsonNode::asText).map(String::strip)
                .filter(s -> !s.isEmpty());
    }

    /** PEM text from {@code field}-data (base64) or {@code field} (a file, relative to the kubeconfig naming it). */
    private static Optional<String> material(Entry entry, String field) {
        Optional<String> data = text(entry.node(), field + "-data")
                .map(b64 -> new String(Base64.getMimeDecoder().decode(b64), StandardCharsets.US_ASCII));
        return data.or(() -> text(entry.node(), field)
                .map(f -> SecretFile.required(entry.resolve(f), "the kubeconfig's " + field)));
    }
}
