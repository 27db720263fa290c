package dev.warden.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.client.Config;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KubernetesAccessTest {

    @TempDir
    Path dir;

    /** A kubeconfig that would run a credential plugin, named where fabric8's own discovery looks first. */
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

    @Test
    void inAPodOnlyTheServiceAccountIsUsedNeverAKubeconfig() throws Exception {
        Path account = Files.createDirectory(dir.resolve("account"));
        Files.writeString(account.resolve("token"), "first-token\n");
        Files.writeString(account.resolve("namespace"), "lilbee");
        Path ran = dir.resolve("plugin-ran");
        Config config = KubernetesAccess.config(podWithAPlantedKubeconfig(ran), account);
        assertEquals("https://10.96.0.1:443/", config.getMasterUrl());
        assertEquals(account.resolve("ca.crt").toString(), config.getCaCertFile());
        assertEquals("lilbee", config.getNamespace(), "the pod's namespace, not the kubeconfig context's");
        assertEquals("first-token", config.getOauthTokenProvider().getToken());
        Files.writeString(account.resolve("token"), "rotated-token");
        assertEquals("rotated-token", config.getOauthTokenProvider().getToken(), "a rotated token is read at the next request");
        assertEquals(null, config.getFile(), "no kubeconfig was read");
        assertFalse(Files.exists(ran), "no credential plugin ran");
    }

    @Test
    void inAPodWithoutATokenLeaseModeStopsWithTheFix() throws Exception {
        Path ran = dir.resolve("plugin-ran");
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> KubernetesAccess.config(podWithAPlantedKubeconfig(ran), dir.resolve("none")));
        assertTrue(e.getMessage().contains(dir.resolve("none").resolve("token") + ": Lease mode and role routing need one"), e.getMessage());
        assertFalse(Files.exists(ran));
    }

    @Test
    void anIpv6ServiceHostIsBracketed() throws Exception {
        Path account = Files.createDirectory(dir.resolve("account"));
        Files.writeString(account.resolve("token"), "t");
        assertEquals("https://[fd00::1]:6443/", KubernetesAccess.config(Map.of("KUBERNETES_SERVICE_HOST", "fd00::1",
                "KUBERNETES_SERVICE_PORT", "6443"), account).getMasterUrl());
    }
}
