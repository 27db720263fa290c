package dev.warden.gate.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.Test;

/**
 * Every fabric8 jar on the class path that carries a Jandex index has that index removed in application.properties:
 * one left there would make Quarkus register all of its model classes for reflection in the native executable
 * (a fabric8 upgrade that adds a jar would grow the executable by megabytes and nobody would see why).
 */
class FabricIndexesTest {

    private static final String KEY = "quarkus.class-loading.removed-resources.\"io.fabric8:%s\"";

    @Test
    void everyIndexedFabric8JarHasItsIndexRemoved() throws IOException {
        Properties properties = new Properties();
        try (InputStream in = Files.newInputStream(Path.of("src/main/resources/application.properties"))) {
            properties.load(in);
        }
        Set<String> indexed = new TreeSet<>();
        List<Path> jars = Arrays.stream(System.getProperty("java.class.path").split(java.io.File.pathSeparator))
                .map(Path::of).filter(p -> p.toString().contains("/io/fabric8/") && p.toString().endsWith(".jar")).toList();
        assertTrue(jars.size() > 10, "fabric8's client and models are on the test class path: " + jars);
        for (Path jar : jars) {
            try (ZipFile zip = new ZipFile(jar.toFile())) {
                if (zip.getEntry("META-INF/jandex.idx") != null) {
                    // ~/.m2/repository/io/fabric8/<artifactId>/<version>/<artifactId>-<version>.jar
                    indexed.add(jar.getParent().getParent().getFileName().toString());
                }
            } catch (IOException e) {
                throw new UncheckedIOException(jar.toString(), e);
            }
        }
        Set<String> missing = new TreeSet<>();
        for (String artifact : indexed) {
            if (!"META-INF/jandex.idx".equals(properties.getProperty(String.format(KEY, artifact)))) {
                missing.add(artifact);
            }
        }
        assertEquals(Set.of(), missing, "add quarkus.class-loading.removed-resources.\"io.fabric8\\:<jar>\"=META-INF/jandex.idx"
                + " to application.properties for each");
    }
}
