package dev.warden.kube;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.testing.TestCertificate;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KubernetesAccessTest {

    @TempDir
    Path dir;

    private TestCertificate certificate;

    @BeforeEach
    void certificate() throws Exception {
        certificate = TestCertificate.make(dir, "apiserver");
    }

    /** A kubeconfig that would run a credential plugin, named where kubectl looks first. */
    private Map<String, String> podWithAPlantedKubeconfig(Path ran) throws Exception {
        Path kubeconfig = Files.writeString(dir.resolve("kubeconfig"), """
                apiVersion: v1
                kind: Config
                clusters: [{name: c, cluster: {server: "https://planted.invalid:6443"}}]
                users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: touch, args: ["%s"]}}}]
                contexts: [{name: x, context: {cluster: c, user: u, namespace: planted}}]
                current-context: x
                """.formatted(ran));
        return Map.of("KUBERNETES_SERVICE_HOST", "10.96.0.1", "KUBERNETES_SERVICE_PORT", "443", "KUBECONFIG", kubeconfig.toString(),
                "HOME", dir.toString());
    }

    private Path account(String token) throws Exception {
        Path account = Files.createDirectory(dir.resolve("account"));
        Files.writeString(account.resolve("token"), token);
        Files.writeString(account.resolve("ca.crt"), certificate.certificatePem());
        return account;
    }

    @Test
    void inAPodOnlyTheServiceAccountIsUsedNeverAKubeconfig() throws Exception {
        Path account = account("first-token\n");
        Files.writeString(account.resolve("namespace"), "lilbee");
        Path ran = dir.resolve("plugin-ran");
        ApiServer.Access access = KubernetesAccess.of(podWithAPlantedKubeconfig(ran), account);
        assertEquals(URI.create("https://10.96.0.1:443"), access.server());
        assertEquals(Optional.of("lilbee"), access.namespace(), "the pod's namespace, not the kubeconfig context's");
        assertEquals(Optional.of("first-token"), access.token().get());
        Files.writeString(account.resolve("token"), "rotated-token");
        assertEquals(Optional.of("rotated-token"), access.token().get(), "a rotated token is read at the next request");
        assertTrue(access.source().contains("service account"), access.source());
        assertFalse(Files.exists(ran), "no credential plugin ran");
    }

    @Test
    void inAPodWithoutATokenLeaseModeStopsWithTheFix() throws Exception {
        Path ran = dir.resolve("plugin-ran");
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> KubernetesAccess.of(podWithAPlantedKubeconfig(ran), dir.resolve("none")));
        assertTrue(e.getMessage().contains(dir.resolve("none").resolve("token") + ": Lease mode and role routing need one"),
                e.getMessage());
        assertFalse(Files.exists(ran));
    }

    @Test
    void anIpv6ServiceHostIsBracketed() throws Exception {
        Path account = account("t");
        assertEquals(URI.create("https://[fd00::1]:6443"), KubernetesAccess.of(Map.of("KUBERNETES_SERVICE_HOST", "fd00::1",
                "KUBERNETES_SERVICE_PORT", "6443"), account).server());
    }

    private static String b64(String text) {
        return Base64.getEncoder().encodeToString(text.getBytes(StandardCharsets.US_ASCII));
    }

    @Test
    void outsideAPodTheCurrentContextOfTheKubeconfigsListedFirstWins() throws Exception {
        Path first = Files.writeString(dir.resolve("first"), """
                apiVersion: v1
                kind: Config
                clusters:
                - name: test
                  cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: %s}
                users:
                - name: warden
                  user: {tokenFile: tokens/warden}
                contexts:
                - name: warden
                  context: {cluster: test, user: warden, namespace: lilbee}
                current-context: warden
                """.formatted(b64(certificate.certificatePem())));
        Files.createDirectory(dir.resolve("tokens"));
        Files.writeString(dir.resolve("tokens/warden"), "from-a-file\n");
        Path second = Files.writeString(dir.resolve("second"), """
                clusters: [{name: test, cluster: {server: "https://elsewhere.invalid"}}]
                current-context: other
                """);
        ApiServer.Access access = KubernetesAccess.of(Map.of("KUBECONFIG", first + ":" + second + ":" + dir.resolve("missing"),
                "HOME", dir.toString()), dir.resolve("no-account"));
        assertEquals(URI.create("https://127.0.0.1:6443"), access.server());
        assertEquals(Optional.of("lilbee"), access.namespace());
        assertEquals(Optional.of("from-a-file"), access.token().get(), "tokenFile, relative to its kubeconfig");
    }

    /** A kubeconfig {@code name} whose user is this test's certificate with {@code key} (PEM). */
    private Path clientCertificateKubeconfig(String name, String key) throws Exception {
        return Files.writeString(dir.resolve(name), """
                clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: %s}}]
                users: [{name: admin, user: {client-certificate-data: %s, client-key-data: %s}}]
                contexts: [{name: admin, context: {cluster: c, user: admin}}]
                current-context: admin
                """.formatted(b64(certificate.certificatePem()), b64(certificate.certificatePem()), b64(key)));
    }

    @Test
    void outsideAPodAClientCertificateIsTheCredential() throws Exception {
        Path config = clientCertificateKubeconfig(".kube-config", certificate.keyPem());
        ApiServer.Access access = KubernetesAccess.of(Map.of("KUBECONFIG", config.toString()), dir);
        assertEquals(Optional.empty(), access.token().get(), "no bearer token beside a client certificate");
        assertEquals(Optional.empty(), access.namespace());
    }

    /** kubeadm's kubeconfigs carry the client key as PKCS#1 ("RSA PRIVATE KEY"), openssl's as PKCS#8. */
    @Test
    void aClientKeyInPkcs1IsReadToo() throws Exception {
        byte[] pkcs8 = Base64.getMimeDecoder().decode(certificate.keyPem().replaceAll("-----[A-Z ]+-----", ""));
        // PKCS#8 wraps the PKCS#1 key of an RSA key of this size after a fixed 26-byte header: version, algorithm, octet string.
        assertEquals("020100300d06092a864886f70d0101010500", java.util.HexFormat.of().formatHex(pkcs8, 4, 22));
        String pkcs1 = "-----BEGIN RSA PRIVATE KEY-----\n" + Base64.getMimeEncoder().encodeToString(
                java.util.Arrays.copyOfRange(pkcs8, 26, pkcs8.length)) + "\n-----END RSA PRIVATE KEY-----\n";
        Path config = clientCertificateKubeconfig("kubeadm.conf", pkcs1);
        assertEquals(URI.create("https://127.0.0.1:6443"), KubernetesAccess.of(Map.of("KUBECONFIG", config.toString()), dir).server());
        Path broken = clientCertificateKubeconfig("broken.conf", "not a key");
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> KubernetesAccess.of(Map.of("KUBECONFIG", broken.toString()), dir));
        assertTrue(e.getMessage().contains("client key is not a PEM private key warden reads"), e.getMessage());
        assertFalse(e.getMessage().contains("not a key"), "never the key's content");
    }

    @Test
    void outsideAPodACredentialPluginOrAnUncheckedServerIsRefusedWithTheFix() throws Exception {
        Path ran = dir.resolve("plugin-ran");
        Map<String, String> env = podWithAPlantedKubeconfig(ran);
        IllegalStateException plugin = assertThrows(IllegalStateException.class,
                () -> KubernetesAccess.of(Map.of("KUBECONFIG", env.get("KUBECONFIG")), dir));
        assertTrue(plugin.getMessage().contains("authenticates by exec, which warden does not use"), plugin.getMessage());
        assertFalse(Files.exists(ran), "no credential plugin ran");

        Path insecure = Files.writeString(dir.resolve("insecure"), """
                clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]
                users: [{name: u, user: {token: t}}]
                contexts: [{name: x, context: {cluster: c, user: u}}]
                current-context: x
                """);
        IllegalStateException unchecked = assertThrows(IllegalStateException.class,
                () -> KubernetesAccess.of(Map.of("KUBECONFIG", insecure.toString()), dir));
        assertTrue(unchecked.getMessage().contains("skips TLS verification"), unchecked.getMessage());

        IllegalStateException none = assertThrows(IllegalStateException.class,
                () -> KubernetesAccess.of(Map.of("HOME", dir.resolve("nobody").toString()), dir));
        assertTrue(none.getMessage().contains("finds no kubeconfig at [" + dir.resolve("nobody/.kube/config") + "]: set KUBECONFIG"),
                none.getMessage());
    }
}
