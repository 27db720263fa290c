package dev.warden.config;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * A secret in a file, as Kubernetes mounts a Secret (a link into its {@code ..data} dir, so links
 * are followed here: the Secret's dir is the kubelet's, not the shared volume). Surrounding
 * whitespace is dropped; an empty file is no secret. Read capped, and never quoted in an error.
 */
public final class SecretFile {

    /** Tokens and keys are short; a file past this is not one. */
    private static final int MAX_BYTES = 16 * 1024;

    private SecretFile() {
    }

    /**
     * The secret in {@code file}.
     *
     * @throws IOException when it cannot be read, is not a regular file, or is over the cap; the
     *     message names the file, never its content
     */
    public static Optional<String> read(Path file) throws IOException {
        if (!Files.isRegularFile(file)) {
            throw new IOException(file + " is not a regular file");
        }
        byte[] bytes;
        try (InputStream in = Files.newInputStream(file)) {
            bytes = in.readNBytes(MAX_BYTES + 1);
        }
        if (bytes.length > MAX_BYTES) {
            throw new IOException(file + " is over " + MAX_BYTES + " bytes: not a token or key");
        }
        return Optional.of(new String(bytes, StandardCharsets.UTF_8).strip()).filter(s -> !s.isEmpty());
    }

    /**
     * The secret in {@code file}, which must be there.
     *
     * @throws UncheckedIOException "warden cannot read {@code what}: ..." naming the file, never its content
     */
    public static String required(Path file, String what) {
        try {
            return read(file).orElseThrow(() -> new IOException(file + " is empty"));
        } catch (IOException e) {
            throw new UncheckedIOException("warden cannot read " + what + ": " + e.getMessage(), e);
        }
    }
}
