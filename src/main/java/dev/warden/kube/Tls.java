package dev.warden.kube;

import io.smallrye.certs.pem.parsers.PKCS1Parser;
import io.smallrye.certs.pem.parsers.PKCS8Parser;
import java.io.ByteArrayInputStream;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.Collection;
import java.util.Optional;
import java.util.regex.Pattern;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * A TLS context for the API server from PEM text, as Kubernetes hands it out: the certificate authority that signed
 * the server's certificate, and optionally a client certificate and its key (PKCS#8, or PKCS#1 for RSA, as openssl and
 * kubeadm write them). Errors name {@code what} the material is, never its content.
 */
final class Tls {

    private static final Pattern PKCS1 = Pattern.compile("-----BEGIN RSA PRIVATE KEY-----");
    private static final char[] NO_PASSWORD = new char[0];

    private Tls() {
    }

    /**
     * Trusting only the certificates in {@code authority} (none given: the JDK's own trust store), presenting
     * {@code client} ({@code certificate}, {@code key}) when given.
     */
    static SSLContext context(Optional<String> authority, Optional<ClientCertificate> client, String what) {
        try {
            TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            if (authority.isPresent()) {
                KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
                store.load(null, null);
                int i = 0;
                for (Certificate certificate : certificates(authority.get(), what + "'s certificate authority")) {
                    store.setCertificateEntry("authority-" + i++, certificate);
                }
                trust.init(store);
            } else {
                trust.init((KeyStore) null);
            }
            KeyManager[] keys = null;
            if (client.isPresent()) {
                KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
                store.load(null, null);
                Collection<? extends Certificate> chain = certificates(client.get().certificate(), what + "'s client certificate");
                store.setKeyEntry("client", key(client.get().key(), what), NO_PASSWORD, chain.toArray(Certificate[]::new));
                KeyManagerFactory factory = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
                factory.init(store, NO_PASSWORD);
                keys = factory.getKeyManagers();
            }
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(keys, trust.getTrustManagers(), null);
            return context;
        } catch (GeneralSecurityException | java.io.IOException e) {
            throw new IllegalStateException("warden cannot make a TLS context of " + what + ": " + e.getClass().getSimpleName(), e);
        }
    }

    /** A client certificate (PEM, the chain) and its private key (PEM). */
    record ClientCertificate(String certificate, String key) {

        @Override
        public String toString() {
            return "ClientCertificate[...]";
        }
    }

    private static Collection<? extends Certificate> certificates(String pem, String what) throws GeneralSecurityException {
        Collection<? extends Certificate> certificates = CertificateFactory.getInstance("X.509")
                .generateCertificates(new ByteArrayInputStream(pem.getBytes(java.nio.charset.StandardCharsets.US_ASCII)));
        if (certificates.isEmpty()) {
            throw new IllegalStateException(what + " holds no PEM certificate");
        }
        return certificates;
    }

    private static PrivateKey key(String pem, String what) {
        PrivateKey key = PKCS1.matcher(pem).find() ? new PKCS1Parser().getKey(pem, null) : new PKCS8Parser().getKey(pem, null);
        if (key == null) {
            throw new IllegalStateException(what + "'s client key is not a PEM private key warden reads (PKCS#8, or PKCS#1 for RSA)");
        }
        return key;
    }
}
