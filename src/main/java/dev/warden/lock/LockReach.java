package dev.warden.lock;

import dev.warden.time.Moment;
import dev.warden.time.MonotonicClock;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Consumer;
import java.util.function.Function;
import org.jboss.logging.Logger;

/**
 * The heartbeat of one lock that should exclude every pod of the volume (hold mode's {@code server.lock}, gate mode's
 * gate lock): its holder writes {@code <lock>.heartbeat} every beat, and reads it first. A holder whose lock did not reach
 * another mount (NFS with {@code local_lock}, a FUSE filesystem that keeps locks to each mount) finds the other's beats
 * there; {@link ReachProof} decides who serves. Each record names its holder's lock domain, this node's kernel (its boot
 * id) and the device the lock file is on through its mount: a lock taken in the record holder's own domain proves that
 * holder let go. Files are opened relative to the checked lock directory, never through a link, read capped; their
 * contents are never quoted. Confined to its keeper's thread.
 */
public final class LockReach {

    public static final String SUFFIX = ".heartbeat";
    private static final Logger LOG = Logger.getLogger(LockReach.class);
    private static final Path BOOT_ID = Path.of("/proc/sys/kernel/random/boot_id");

    private final Posix posix;
    private final Path lock;
    private final String name;
    private final String boot;
    private final Function<String, ReachProof> proofs;
    private final MonotonicClock clock;
    private ReachProof proof;
    /** The hold the heartbeat is for: every call about another (a lock retired, then another taken) is ignored. */
    private FileId hold;
    private ReachProof.Reach reach;
    /** What {@link #reach} means, made once a change: the keepers ask it every round. */
    private Verdict verdict;
    private Moment nextLook;
    private String lastReadProblem;
    private String lastWriteProblem;
    private String fix;
    /** Whether another pod holds the same lock through a mount of its own now: for the metric, from any thread. */
    private volatile boolean shared;
    private Consumer<Verdict> changes = verdict -> { };

    /**
     * @param boot this node's kernel, as its boot id names it
     * @param outlives how long what the holder serves may outlive its last beat ({@link ReachProof})
     */
    public LockReach(Posix posix, Path lock, String holder, String pod, String boot, Duration beat, Duration outlives,
            MonotonicClock clock) {
        this(posix, lock, boot, domain -> new ReachProof(holder, pod, domain, beat, outlives), clock);
    }

    /** With the decision given, for the lock domain of each take. */
    public LockReach(Posix posix, Path lock, String boot, Function<String, ReachProof> proofs, MonotonicClock clock) {
        this.posix = posix;
        this.lock = lock;
        this.name = lock.getFileName() + SUFFIX;
        this.boot = boot;
        this.proofs = proofs;
        this.clock = clock;
    }

    /** Makes the heartbeat of a lock, at the lock's path. */
    @FunctionalInterface
    public interface Factory {
        /** @param outlives how long what the holder serves may outlive its last beat ({@link ReachProof}) */
        LockReach of(Path lock, Duration outlives);

        /** Heartbeats written through libc, every {@code beat}, named for this pod ({@code POD_NAME}, else the host's). */
        static Factory system(Duration beat) {
            return (lock, outlives) -> LockReach.of(NativePosix.shared(), lock, System.getenv(), beat, outlives,
                    MonotonicClock.SYSTEM);
        }
    }

    /**
     * A heartbeat for {@code lock} with a holder token of this run: the pod's name ({@code POD_NAME}, else the host's), and
     * this node's boot id. Where it cannot be read every such holder shares one domain: the heartbeat then tells no two
     * nodes apart, and the flock decides alone, as it did before there was one.
     */
    public static LockReach of(Posix posix, Path lock, Map<String, String> env, Duration beat, Duration outlives,
            MonotonicClock clock) {
        String pod = token(Optional.ofNullable(env.get("POD_NAME")).or(() -> Optional.ofNullable(env.get("HOSTNAME")))
                .filter(s -> !s.isBlank()).orElse("unnamed"));
        String run = UUID.randomUUID().toString().substring(0, 8);
        return new LockReach(posix, lock, pod + ":" + run, pod, bootId().orElse("unread"), beat, outlives, clock);
    }

    private static Optional<String> bootId() {
        try (InputStream in = Files.newInputStream(BOOT_ID)) {
            String id = new String(in.readNBytes(64), StandardCharsets.US_ASCII).strip();
            return id.matches("[0-9a-f-]{8,40}") ? Optional.of(id) : Optional.empty();
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    private static String token(String raw) {
        String cleaned = raw.strip().replaceAll("[^A-Za-z0-9._:-]", "-");
        return cleaned.substring(0, Math.min(cleaned.length(), 100));
    }

    /** {@code listener} hears each verdict that differs in kind from the one before, on the keeper's thread. */
    public void onChange(Consumer<Verdict> listener) {
        changes = listener;
    }

    /** Whether another pod holds this lock too, through a mount whose locks do not reach this one (either serves). */
    public boolean shared() {
        return shared;
    }

    /** What is known now: serve only on {@link Verdict.Proven}. */
    public sealed interface Verdict {
        /** Why, as the status and the log say it. */
        String why();

        /** The lock excludes every other holder seen; {@code overlapped}: a later holder beats it on a mount of its own. */
        record Proven(boolean overlapped, String why) implements Verdict {
        }

        /** Taken while the heartbeat names a holder of another lock domain: watching whether it still beats. */
        record Proving(String why) implements Verdict {
        }

        /** Another holder, earlier, beats the same lock: it did not reach this warden's mount. */
        record Shared(String why) implements Verdict {
        }
    }

    /** The lock on {@code file} was just taken (or taken back from this pod's supervisor): the heartbeat is for it now. */
    public Verdict taken(FileId file) {
        hold = file;
        proof = proofs.apply(boot + ":" + file.device());
        reach = null;
        Moment now = clock.now();
        apply(proof.taken(read(), now), now);
        return verdict;
    }

    /** One look while {@code file} is held: reads and beats when due, else answers from what it knows. */
    public Verdict keep(FileId file) {
        if (reach == null || !file.equals(hold)) {
            return taken(file);
        }
        Moment now = clock.now();
        if (!now.isBefore(nextLook)) {
            apply(proof.step(reach, read(), now), now);
        }
        return verdict;
    }

    /**
     * The lock on {@code file} is being let go, and nothing this holder served outlives it: a proven holder leaves its
     * record released, so that the next holder of its domain knows it let go.
     */
    public void letGo(FileId file) {
        if (reach != null && file.equals(hold)) {
            proof.letGo(reach).ifPresent(this::write);
        }
        forget(file);
    }

    /**
     * This warden stops beating for {@code file} while what it served may outlive it (a lilbee holding the same open file
     * stops later): the record stays as it was, so a holder on a mount the lock does not reach waits out the window.
     */
    public void forget(FileId file) {
        if (file.equals(hold)) {
            reach = null;
            hold = null;
            shared = false;
        }
    }

    private Verdict verdictOf(ReachProof.Reach reach) {
        return switch (reach) {
            case ReachProof.Reach.Proven proven when proven.overlapSeen().isPresent() -> new Verdict.Proven(true,
                    lock + " is also locked by another pod, through a mount whose locks do not reach this one: its"
                            + " heartbeat in " + heartbeatPath() + " advances. It took the lock after this warden, so it"
                            + " stands by. " + fix());
            case ReachProof.Reach.Proven proven -> new Verdict.Proven(false, "the lock excludes every holder seen");
            case ReachProof.Reach.Proving proving -> new Verdict.Proving("proving that " + lock + " excludes the other"
                    + " pods: " + heartbeatPath() + " names a holder of the lock through another mount or node, whose"
                    + " locks may not meet this one's; serving once it stays still for " + proof.window().toMillis() + " ms");
            case ReachProof.Reach.Shared shared -> new Verdict.Shared("the locks do not reach across pods: " + lock
                    + " is held here and by another pod at once (its heartbeat in " + heartbeatPath() + " advances). That"
                    + " holder came first and serves; this warden stands by while it beats. " + fix());
        };
    }

    /** What the mount is and how to make its locks reach, from mountinfo. */
    private String fix() {
        if (fix == null) {
            fix = fixFor(Mount.holding(lock));
        }
        return fix;
    }

    private static String fixFor(Optional<Mount> mount) {
        String options = mount.map(m -> " (mount options " + String.join(",", m.options().stream().sorted().toList()) + ")")
                .orElse("");
        return mount.flatMap(Mount::localLocks).map(local -> local + options + ".").orElseGet(() -> mount.map(m ->
                "The lock is on " + m.type() + " " + m.source() + " at " + m.point() + options + ". ").orElse("")
                + "Put the data dir on a filesystem whose flock(2) locks every mount shares (NFS without local_lock or"
                + " nolock, CephFS), or keep every pod that mounts it on one node with one mount of it.");
    }

    private Path heartbeatPath() {
        return lock.resolveSibling(name);
    }

    private void apply(ReachProof.Step step, Moment now) {
        boolean wrote = step.write().map(this::write).orElse(true);
        ReachProof.Reach before = reach;
        // A beat that could not be written is no beat: the holder counts as silent since its last one, as others see it.
        reach = !wrote && step.reach() instanceof ReachProof.Reach.Proven next && before instanceof ReachProof.Reach.Proven last
                ? new ReachProof.Reach.Proven(last.mine(), last.wroteAt(), next.overlapSeen()) : step.reach();
        nextLook = proof.nextLook(now);
        if (before != null && reach.equals(before)) {
            return;
        }
        verdict = verdictOf(reach);
        shared = verdict instanceof Verdict.Shared || verdict instanceof Verdict.Proven proven && proven.overlapped();
        if (before == null || !kind(before).equals(kind(reach))) {
            switch (verdict) {
                case Verdict.Shared why -> LOG.error(why.why());
                case Verdict.Proven proven when proven.overlapped() -> LOG.warn(proven.why());
                case Verdict.Proving proving -> LOG.info(proving.why());
                case Verdict.Proven proven when before != null -> LOG.infof("%s excludes every other holder again: its"
                        + " heartbeat shows no other", lock);
                case Verdict.Proven proven -> {
                }
            }
            changes.accept(verdict);
        }
    }

    /** The kind of a state, overlapped or not for a proven one: a change of kind is worth a log line and an Event. */
    private static String kind(ReachProof.Reach reach) {
        return reach instanceof ReachProof.Reach.Proven proven ? "proven" + proven.overlapSeen().isPresent()
                : reach.getClass().getSimpleName();
    }

    /**
     * The record at the path: empty when there is none, {@link Heartbeat#UNREADABLE} when something is there that is not
     * a record (a directory, a FIFO, a link, garbage) or cannot be read: a holder might be behind it.
     */
    private Optional<Heartbeat> read() {
        try (CheckedDir dir = CheckedDir.open(posix, lock.toAbsolutePath().getParent())) {
            if (dir.stat(name).isEmpty()) {
                lastReadProblem = null;
                return Optional.empty();
            }
            Optional<Heartbeat> record = Heartbeat.parse(dir.read(name, Heartbeat.MAX_BYTES));
            lastReadProblem = null;
            return Optional.of(record.orElse(Heartbeat.UNREADABLE));
        } catch (IOException | RuntimeException e) {
            String problem = "Cannot read " + heartbeatPath() + " (" + e.getMessage() + ")";
            lastReadProblem = warnOnce(problem, lastReadProblem);
            return Optional.of(Heartbeat.UNREADABLE);
        }
    }

    /** Whether the record was written. */
    private boolean write(Heartbeat beat) {
        try (CheckedDir dir = CheckedDir.open(posix, lock.toAbsolutePath().getParent())) {
            dir.replace(name, beat.bytes());
            lastWriteProblem = null;
            return true;
        } catch (IOException | RuntimeException e) {
            String problem = "Cannot write " + heartbeatPath() + " (" + e.getMessage() + "): a pod whose lock on this volume"
                    + " does not reach this one will not see that this warden holds it. Make the data dir writable";
            lastWriteProblem = warnOnce(problem, lastWriteProblem);
            return false;
        }
    }

    /** Logs {@code problem} unless it is the one logged last; returns it, to be the last. */
    private static String warnOnce(String problem, String last) {
        if (!problem.equals(last)) {
            LOG.warn(problem);
        }
        return problem;
    }
}
