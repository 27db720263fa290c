package dev.warden.testing;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A self-signed certificate for 127.0.0.1 and localhost and its RSA key, made with the JDK's keytool (the default suite
 * needs nothing but a JDK): as a PKCS#12 store for a TLS server, and as the PEM text a kubeconfig or a service account
 * holds.
 */
public record TestCertificate(KeyStore store, char[] password, String certificatePem, String keyPem) {

    public static TestCertificate make(Path dir, String name) throws Exception {
        Path file = dir.resolve(name + ".p12");
        char[] password = "changeit".toCharArray();
        Path keytool = Path.of(System.getProperty("java.home"), "bin", "keytool");
        Process process = new ProcessBuilder(List.of(keytool.toString(), "-genkeypair", "-alias", name, "-keyalg", "RSA",
                "-keysize", "2048", "-dname", "CN=" + name, "-ext", "san=ip:127.0.0.1,dns:localhost", "-validity", "2",
                "-storetype", "PKCS12", "-keystore", file.toString(), "-storepass", "changeit", "-keypass", "changeit"))
                .redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes());
        if (!process.waitFor(60, TimeUnit.SECONDS) || process.exitValue() != 0) {
            throw new AssertionError("keytool failed: " + output);
        }
        KeyStore store = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(file)) {
            store.load(in, password);
        }
        Certificate certificate = store.getCertificate(name);
        byte[] key = store.getKey(name, password).getEncoded();
        return new TestCertificate(store, password, pem("CERTIFICATE", certificate.getEncoded()), pem("PRIVATE KEY", key));
    }

    private static String pem(String type, byte[] der) {
        return "-----BEGIN " + type + "-----\n" + Base64.getMimeEncoder(64, "\n".getBytes()).encodeToString(der) + "\n-----END "
                + type + "-----\n";
    }
}
