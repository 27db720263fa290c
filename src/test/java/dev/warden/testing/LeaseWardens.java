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
 * {@code warden serve --mode gate} with the Lease election against one API server, each warden on a data root of its
 * own (pods on different nodes, whose file locks never meet, so the Lease alone elects) beside the real lilbee
 * supervisor running a stand-in lilbee, and a watch that no two of those lilbees ever serve at once. {@link #close()}
 * stops every warden and supervisor.
 */
public final class LeaseWardens implements AutoCloseable {

    private static final Pattern STACK_FRAME = Pattern.compile("^\\s+at |^\\s+\\.\\.\\. \\d+ more");

    private final String prefix;
    private final Path kubeconfig;
    private final Path root;
    private final List<String> settings;
    private final List<WardenProcess> wardens = new CopyOnWriteArrayList<>();
    private final Map<WardenProcess, Supervised> lilbees = new java.util.concurrent.ConcurrentHashMap<>();
    /**
     * The supervisor's own settings: the longest permit it takes and its grace (a second, as these tests' timings are),
     * which every warden is given too.
     */
    public static final Supervised.Settings SUPERVISOR = new Supervised.Settings(java.time.Duration.ofSeconds(5),
            java.time.Duration.ofSeconds(1));
    private OverlapWatch watch;

    /** {@code settings}: warden's {@code -D} options on top of lease mode and each warden's identity. */
    public LeaseWardens(String prefix, Path kubeconfig, Path root, List<String> settings) {
        this.prefix = prefix;
        this.kubeconfig = kubeconfig;
        this.root = root;
        this.settings = settings;
    }

    /**
     * Starts a warden whose Lease identity is {@code identity}, on the data root {@code <root>/<identity>}; {@code more}:
     * its own {@code -D} options, on top of everyone's.
     */
    public WardenProcess start(String identity, String... more) throws IOException {
        List<String> options = new ArrayList<>(List.of("-Dwarden.gate.election=lease", "-Dwarden.gate.lease.identity=" + identity));
        options.addAll(SUPERVISOR.wardenSettings());
        options.addAll(settings);
        options.addAll(List.of(more));
        WardenProcess warden = WardenProcess.serve(prefix + "-" + identity, Map.of("KUBECONFIG", kubeconfig.toString(),
                // Outside a pod, as the test's API server is: in a pod warden would use only the service account.
                "KUBERNETES_SERVICE_HOST", ""), null,
                options, "--mode", "gate", "--data-root", root.resolve(identity).toString());
        wardens.add(warden);
        lilbees.put(warden, Supervised.standIn(prefix + "-" + identity, warden.socket(),
                root.resolve(identity).resolve("data/server.lock"), SUPERVISOR));
        return warden;
    }

    /** The stand-in lilbee {@code warden}'s supervisor runs. */
    public Supervised lilbee(WardenProcess warden) {
        return lilbees.get(warden);
    }

    /**
     * Stops {@code warden} (already killed, say) being counted; {@link #close()} no longer closes it. Its lilbee is still
     * watched until its supervisor has stopped it.
     */
    public void forget(WardenProcess warden) {
        wardens.remove(warden);
    }

    /** The one warden whose pod's lilbee serves; empty when none does, or more than one. */
    public Optional<WardenProcess> theOneStarted() {
        List<WardenProcess> serving = wardens.stream().filter(w -> !lilbees.get(w).serving().isEmpty()).toList();
        return serving.size() == 1 ? Optional.of(serving.getFirst()) : Optional.empty();
    }

    /** From now on, notes any moment at which more than one warden's lilbee serves. */
    public void watchForOverlaps() {
        watch = OverlapWatch.of(() -> lilbees.values().stream().flatMap(l -> l.serving().stream()).toList());
    }

    /** The moments more than one lilbee served, with their pids: empty is right. */
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
        for (Supervised lilbee : lilbees.values()) {
            lilbee.close();
        }
    }
}
