package dev.warden.testing;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * {@code warden serve --mode gate} with the Lease election against one API server, each warden on a
 * data root of its own (pods on different nodes, whose file locks never meet, so the Lease alone elects),
 * and a watch that no two of them are ever started at once. {@link #close()} stops every warden.
 */
public final class LeaseWardens implements AutoCloseable {

    private static final Pattern STACK_FRAME = Pattern.compile("^\\s+at |^\\s+\\.\\.\\. \\d+ more");

    private final String prefix;
    private final Path kubeconfig;
    private final Path root;
    private final List<String> settings;
    private final List<WardenProcess> wardens = new CopyOnWriteArrayList<>();
    private OverlapWatch watch;

    /** {@code settings}: warden's {@code -D} options on top of lease mode and each warden's identity. */
    public LeaseWardens(String prefix, Path kubeconfig, Path root, List<String> settings) {
        this.prefix = prefix;
        this.kubeconfig = kubeconfig;
        this.root = root;
        this.settings = settings;
    }

    /** Starts a warden whose Lease identity is {@code identity}, on the data root {@code <root>/<identity>}. */
    public WardenProcess start(String identity) throws IOException {
        List<String> options = new ArrayList<>(List.of("-Dwarden.gate.election=lease", "-Dwarden.gate.lease.identity=" + identity));
        options.addAll(settings);
        WardenProcess warden = WardenProcess.serve(prefix + "-" + identity, Map.of("KUBECONFIG", kubeconfig.toString(),
                // Outside a pod, as the test's API server is: in a pod warden would use only the service account.
                "KUBERNETES_SERVICE_HOST", ""), null,
                options, "--mode", "gate", "--data-root", root.resolve(identity).toString());
        wardens.add(warden);
        return warden;
    }

    /** Stops {@code warden} (already killed, say) being counted or watched; {@link #close()} no longer closes it. */
    public void forget(WardenProcess warden) {
        wardens.remove(warden);
    }

    /** The one warden whose startup probe is UP; empty when none is, or more than one. */
    public Optional<WardenProcess> theOneStarted() {
        return WardenProcess.theOneStarted(wardens);
    }

    /** From now on, notes any moment at which more than one warden says started. */
    public void watchForOverlaps() {
        watch = OverlapWatch.of(() -> wardens.stream().filter(w -> w.status("/q/health/started") == 200)
                .map(WardenProcess::pid).toList());
    }

    /** The moments more than one warden said started, with their pids: empty is right. */
    public List<String> overlaps() {
        return watch == null ? List.of() : watch.overlaps();
    }

    /** Every warden's log, for a failure's message; without Java stack frames (fabric8 logs one per failed request). */
    public String logs() {
        return wardens.stream().map(w -> w.log().lines().filter(l -> !STACK_FRAME.matcher(l).find())
                .collect(Collectors.joining("\n"))).collect(Collectors.joining("\n----\n"));
    }

    @Override
    public void close() throws InterruptedException {
        if (watch != null) {
            watch.close();
        }
        for (WardenProcess warden : wardens) {
            warden.close();
        }
    }
}
