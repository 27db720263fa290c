package dev.warden.gate.pod;

import dev.warden.gate.GateAction.Word;
import dev.warden.lock.Posix;
import dev.warden.lock.ProcFs;
import dev.warden.time.Moment;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import org.jboss.logging.Logger;

/**
 * warden's end of the switch: a Unix socket, on a volume only warden's and lilbee's containers mount, that lilbee's
 * supervisor ({@code helm/warden/files/lilbee-supervisor.py}) connects to. warden tells it, a line at a time, whether
 * lilbee may start ({@code start <until>}, with the gate lock's descriptor), go on ({@code go <until>}) or must stop
 * ({@code stop <n> <reason>}, answered {@code stopped <n>} once done); it reports the lilbee it runs
 * ({@code lilbee <pid> <start ticks> <launched>} or {@code lilbee none}), the end of the permit it holds
 * ({@code permit <until>}, 0 for none), the lilbee it has prepared, its modules loaded, for a permit to start in
 * ({@code warm <pid>} or {@code warm none}), and the gate file whose lock it holds for its lilbee ({@code gate <st_dev>
 * <st_ino>} or {@code gate none}: the descriptor a start passed, which it keeps, never gives lilbee, and gives back
 * only to the warden it believes, with its first report to it); it says {@code step-down} when it is SIGTERMed (its
 * pod, or its container, is going away: it is terminating from then on) and {@code exiting} last, when it exits with its
 * lilbee gone. Each {@code hello <protocol> <pid>} of the supervisor's is answered {@code hello <protocol> <now>}: it
 * believes warden only on a hello that reads its own monotonic clock, asks again after one read late, and reports
 * (and so hears warden's words, which wait for its first report) only once it believes.
 *
 * <p><b>One supervisor per switch.</b> Every process of lilbee's container runs as warden's UID and can connect here,
 * so the first to say hello is the supervisor until its connection closes: later connections are refused (accepted and
 * closed), and the established one is never dropped for a newer. Words, the gate lock's descriptor, reports, stops'
 * answers and step-downs travel on that one connection alone, and the gate proves as lilbee only a descendant of its
 * peer's process ({@link #supervisorPid()}, from {@code SO_PEERCRED}). The one descriptor kept is the one the
 * supervisor passes with its report's gate line ({@link #takeOfferedGate()}), which warden holds only as the open file
 * that holds the gate's lock; any other is closed. A peer of another UID is not listened to.
 *
 * <p>Everything here is non-blocking and runs on the gate keeper's thread, once a round; what a round reads and accepts
 * is capped (a flood waits for the next round, in the kernel's buffers), a line too, and a supervisor that does not read
 * is let go.
 *
 * <p>Not final only so that the simulation's mutation test can undo the one-supervisor rule and the answer to a stop
 * said here (GateMutationSoak).
 */
public class LilbeeSwitch implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(LilbeeSwitch.class);
    static final int PROTOCOL = 1;
    /** A supervisor's line is a few dozen bytes: more is not a supervisor. */
    private static final int MAX_LINE = 512;
    /** Connections that have not said hello yet: a supervisor connecting says it at once. */
    private static final int MAX_PENDING = 4;
    /** How long a connection may take to say hello: the supervisor says it with its connect. */
    static final Duration HELLO_WITHIN = Duration.ofSeconds(2);
    /** How often a refusal is logged at most: a neighbour connecting in a loop must not fill the log. */
    private static final Duration REFUSALS_LOGGED_EVERY = Duration.ofSeconds(10);
    /** How often a word is said again though it has not changed: permits are renewed well within their length. */
    static final Duration REPEAT = Duration.ofMillis(500);
    /** What one round reads from one connection at most: a supervisor's report is a few hundred bytes. */
    private static final int READ_PER_ROUND = 8192;
    /** Connections one round accepts at most: the rest wait in the backlog, or are refused by the kernel. */
    private static final int ACCEPTS_PER_ROUND = 16;

    private final Posix posix;
    private final SwitchSocket socket;
    private final int uid;
    private final List<SwitchConnection> pending = new ArrayList<>();
    /** The first peer to say hello, until its connection closes. */
    private SwitchConnection supervisor;
    /** Each stop said after something else is numbered: a supervisor answers it once it is done. */
    private long stopNumber;
    private String lastKind = "";
    /** Whether the last supervisor to leave said {@code exiting} first (it left no lilbee behind). */
    private boolean lastLeftExiting;
    /** The supervisor said {@code step-down} since the last {@link #takeStepDown()}: its pid. */
    private OptionalLong stepDownHeard = OptionalLong.empty();
    private Moment refusalLoggedAt;
    private int refusedSinceLogged;
    /** The gate lock's descriptor the supervisor gave back, until taken ({@link #takeOfferedGate()}); -1: none. */
    private int offeredGate = -1;
    /**
     * The latest end of the permits said to supervisors that have left without answering a stop for them: only the
     * process a permit was said to can use it, and only that process can say it is done with it.
     */
    private Optional<Moment> permitsOfTheGone = Optional.empty();

    private LilbeeSwitch(Posix posix, SwitchSocket socket, int uid) {
        this.posix = posix;
        this.socket = socket;
        this.uid = uid;
    }

    /**
     * Listens at {@code path}, replacing whatever is there (a previous run's socket, or another process's): bound
     * under a name of its own, made warden's UID's alone, then renamed over the path.
     */
    public static LilbeeSwitch open(Posix posix, ProcFs procs, Path path, int uid) throws IOException {
        return new LilbeeSwitch(posix, procs, path, uid);
    }

    /** As {@link #open}: for the mutation test, which undoes one of its rules at a time in a subclass. */
    protected LilbeeSwitch(Posix posix, ProcFs procs, Path path, int uid) throws IOException {
        this(posix, SwitchSocket.open(posix, procs, path), uid);
    }

    public Path path() {
        return socket.path();
    }

    /** Takes in new connections, a supervisor's hello, and what the supervisor sent since the last round. */
    public void poll(Moment now) {
        socket.keep(now);
        accept(now);
        for (SwitchConnection connection : List.copyOf(pending)) {
            if (now.since(connection.accepted).compareTo(HELLO_WITHIN) > 0) {
                drop(connection, "it said no hello within " + HELLO_WITHIN.toMillis() + " ms");
            } else {
                read(connection, now);
            }
        }
        if (supervisor != null) {
            read(supervisor, now);
        }
    }

    /** Whether a supervisor is connected and has said hello. */
    public boolean connected() {
        return supervisor != null;
    }

    /** The supervisor's process, as the kernel named it when it connected ({@code SO_PEERCRED}); empty when none is. */
    public OptionalLong supervisorPid() {
        return supervisor == null ? OptionalLong.empty() : OptionalLong.of(supervisor.peer.pid());
    }

    /**
     * Whether the last stop said is done: the supervisor connected has answered it (no lilbee runs, no permit held) or
     * said it exits, or, none connected, the last to leave said it exited. False before any stop, and while none is
     * connected otherwise (a supervisor out of reach may still hold a permit).
     */
    public boolean stopDone() {
        if (!lastKind.equals("stop")) {
            return false;
        }
        return supervisor == null ? lastLeftExiting : supervisor.exiting || supervisor.stopped == stopNumber;
    }

    /**
     * The latest end of the permits said to supervisors since gone without answering a stop for them (their process
     * may still hold one: only it could say it is done); empty when there were none.
     */
    public Optional<Moment> permitsOfTheGone() {
        return permitsOfTheGone;
    }

    /**
     * The gate lock's descriptor the supervisor passed back with its report (to a restarted warden, or one it
     * reconnected to), once: the caller owns it from here. Empty when none came since the last call.
     */
    public OptionalInt takeOfferedGate() {
        int fd = offeredGate;
        offeredGate = -1;
        return fd < 0 ? OptionalInt.empty() : OptionalInt.of(fd);
    }

    /** The supervisor's pid if it asked warden to step down since the last call (each request is taken once). */
    public OptionalLong takeStepDown() {
        OptionalLong heard = stepDownHeard;
        stepDownHeard = OptionalLong.empty();
        return heard;
    }

    /** The supervisor's last report. */
    public Optional<SupervisorReport> report() {
        return supervisor == null ? Optional.empty() : supervisor.report;
    }

    /**
     * Tells the supervisor {@code word}: at once when it is news to it, else every {@link #REPEAT}. A start goes with
     * {@code gateFd} (when there is one: not where the Lease alone elects).
     */
    public void say(Word word, Moment now, OptionalInt gateFd) {
        if (word instanceof Word.Silent) {
            return;
        }
        if (word instanceof Word.Stop && !lastKind.equals("stop")) {
            stopNumber++;
        }
        String kind = switch (word) {
            case Word.Start start -> "start";
            case Word.Go go -> "go";
            case Word.Stop stop -> "stop";
            case Word.Silent silent -> throw new IllegalStateException("silence is not said");
        };
        lastKind = kind;
        SwitchConnection to = supervisor;
        // A supervisor reports first thing once it believes warden, and hears nothing before: a word before its report
        // (a restarted warden's stop, its gate lock not given back yet) would only reach it together with the hello.
        if (to == null || to.report.isEmpty()) {
            return;
        }
        boolean news = !to.lastWord.equals(kind) || to.lastSaid == null || now.since(to.lastSaid).compareTo(REPEAT) >= 0;
        if (news) {
            to.lastWord = kind;
            to.lastSaid = now;
            String line = switch (word) {
                case Word.Start start -> "start " + start.until().nanos();
                case Word.Go go -> "go " + go.until().nanos();
                case Word.Stop stop -> {
                    to.stopSaid = stopNumber;
                    yield "stop " + stopNumber + " " + printable(stop.reason());
                }
                case Word.Silent silent -> throw new IllegalStateException("silence is not said");
            };
            send(to, line + "\n", word instanceof Word.Start ? gateFd.orElse(-1) : -1);
            switch (word) {
                case Word.Start start -> to.permitted = Optional.of(later(to.permitted, start.until()));
                case Word.Go go -> to.permitted = Optional.of(later(to.permitted, go.until()));
                default -> {
                }
            }
        }
    }

    private static Moment later(Optional<Moment> a, Moment b) {
        return a.filter(b::isBefore).orElse(b);
    }

    private void accept(Moment now) {
        for (int accepted = 0; accepted < ACCEPTS_PER_ROUND; accepted++) {
            int fd;
            try {
                fd = socket.accept();
            } catch (Posix.ErrnoException e) {
                LOG.warnf("The switch socket %s could not take a connection: %s", socket.path(), e.getMessage());
                return;
            }
            if (fd < 0) {
                return;
            }
            Posix.Peer peer;
            try {
                peer = posix.peer(fd);
            } catch (Posix.ErrnoException e) {
                posix.close(fd);
                continue;
            }
            if (peer.uid() != uid) {
                refuse(fd, now, "pid " + peer.pid() + " runs as UID " + peer.uid() + ", and only warden's UID (" + uid
                        + ") may connect");
            } else if (supervisor != null && !replacesTheSupervisor()) {
                refuse(fd, now, "lilbee's supervisor (pid " + supervisor.peer.pid() + ") is connected, and speaks for lilbee's"
                        + " container alone until it leaves; pid " + peer.pid() + " connected beside it");
            } else if (pending.size() >= MAX_PENDING) {
                refuse(fd, now, MAX_PENDING + " connections have not said hello yet; pid " + peer.pid() + " connected too");
            } else {
                pending.add(new SwitchConnection(fd, peer, now));
            }
        }
    }

    /**
     * Whether a peer that connects and says hello while the supervisor is connected takes its place: never, the first
     * speaks for lilbee's container until it leaves. A switch where the newest spoke would let any process of lilbee's
     * container push the supervisor off it, and be told what only the supervisor may hear.
     */
    protected boolean replacesTheSupervisor() {
        return false;
    }

    /**
     * Whether {@code stopped <answered>} answers the last stop said on its connection ({@code saidHere}): an answer to
     * a stop said on another connection (a previous warden's, numbered its own way) says nothing of this one's.
     */
    protected boolean answers(long answered, long saidHere) {
        return answered == saidHere;
    }

    /** Closes a connection at once, logged at most every {@link #REFUSALS_LOGGED_EVERY} with how many since. */
    private void refuse(int fd, Moment now, String why) {
        posix.close(fd);
        refusedSinceLogged++;
        if (refusalLoggedAt == null || now.since(refusalLoggedAt).compareTo(REFUSALS_LOGGED_EVERY) >= 0) {
            LOG.warnf("The switch socket %s refused a connection: %s%s", socket.path(), why,
                    refusedSinceLogged > 1 ? " (" + (refusedSinceLogged - 1) + " more refused since the last said)" : "");
            refusalLoggedAt = now;
            refusedSinceLogged = 0;
        }
    }

    private void read(SwitchConnection connection, Moment now) {
        for (int read = 0; read < READ_PER_ROUND && isOpen(connection); ) {
            Posix.Received received;
            try {
                received = posix.receive(connection.fd, 1024);
            } catch (Posix.ErrnoException e) {
                drop(connection, e.getMessage());
                return;
            }
            if (received == null) {
                return;
            }
            read += received.bytes().length;
            for (int fd : received.fds()) {
                keepPassed(connection, fd);
            }
            if (received.bytes().length == 0) {
                drop(connection, "it closed the connection");
                return;
            }
            connection.in.append(new String(received.bytes(), StandardCharsets.US_ASCII));
            int newline;
            while (isOpen(connection) && (newline = connection.in.indexOf("\n")) >= 0) {
                String line = connection.in.substring(0, newline);
                connection.in.delete(0, newline + 1);
                hear(connection, line, now);
            }
            if (connection.in.length() > MAX_LINE) {
                drop(connection, "a line longer than " + MAX_LINE + " bytes");
            }
        }
    }

    /**
     * A descriptor passed: kept only from the supervisor, one at a time, for its next line to claim (its gate line,
     * which it sends first in the write the descriptor goes with); from anyone else, or more than one, closed.
     */
    private void keepPassed(SwitchConnection connection, int fd) {
        if (connection != supervisor || connection.passed >= 0) {
            posix.close(fd);
        } else {
            connection.passed = fd;
        }
    }

    private boolean isOpen(SwitchConnection connection) {
        return connection == supervisor || pending.contains(connection);
    }

    private void hear(SwitchConnection connection, String line, Moment now) {
        String[] words = line.trim().split(" ");
        if (connection != supervisor) {
            greet(connection, words, now);
            return;
        }
        int passed = connection.passed;
        connection.passed = -1;
        if (passed >= 0 && words.length == 3 && words[0].equals("gate")) {
            if (offeredGate >= 0) {
                posix.close(offeredGate);
            }
            offeredGate = passed;
        } else if (passed >= 0) {
            posix.close(passed);
        }
        try {
            switch (words[0]) {
                case "hello" -> send(connection, "hello " + PROTOCOL + " " + now.nanos() + "\n", -1);
                case "lilbee", "permit", "warm", "gate" -> connection.report = Optional.of(connection.report
                        .orElse(SupervisorReport.NOTHING).heard(words));
                case "stopped" -> {
                    // An answer to a stop said on another connection (a previous warden's, whose numbers were its
                    // own) says nothing of this one's.
                    if (words.length == 2 && answers(Long.parseLong(words[1]), connection.stopSaid)) {
                        connection.stopped = Long.parseLong(words[1]);
                    }
                }
                case "exiting" -> connection.exiting = true;
                case "step-down" -> {
                    if (!connection.terminating) {
                        connection.terminating = true;
                        stepDownHeard = OptionalLong.of(connection.peer.pid());
                    }
                }
                default -> {
                    // not a word of the protocol: ignored
                }
            }
        } catch (NumberFormatException e) {
            // a report that does not parse says nothing
        }
    }

    /** A connection's first words: a hello of this protocol makes it the supervisor, if none is; nothing else counts. */
    private void greet(SwitchConnection connection, String[] words, Moment now) {
        if (!words[0].equals("hello")) {
            drop(connection, "its first line was not a hello");
            return;
        }
        pending.remove(connection);
        if (words.length < 2 || !words[1].equals(Integer.toString(PROTOCOL))) {
            pending.add(connection);
            drop(connection, "it speaks another version of the switch's protocol");
            return;
        }
        if (supervisor != null && !replacesTheSupervisor()) {
            pending.add(connection);
            drop(connection, "lilbee's supervisor (pid " + supervisor.peer.pid() + ") said hello first");
            return;
        }
        if (supervisor != null) {
            drop(supervisor, "pid " + connection.peer.pid() + " said hello since");
        }
        supervisor = connection;
        LOG.infof("lilbee's supervisor (pid %d) connected to the switch socket", connection.peer.pid());
        send(connection, "hello " + PROTOCOL + " " + now.nanos() + "\n", -1);
        for (SwitchConnection other : List.copyOf(pending)) {
            drop(other, "lilbee's supervisor (pid " + connection.peer.pid() + ") said hello first");
        }
    }

    private void send(SwitchConnection connection, String text, int passFd) {
        connection.send(posix, text, passFd).ifPresent(failed -> drop(connection, failed));
    }

    private void drop(SwitchConnection connection, String why) {
        if (connection.passed >= 0) {
            posix.close(connection.passed);
            connection.passed = -1;
        }
        if (connection == supervisor) {
            supervisor = null;
            lastLeftExiting = connection.exiting;
            boolean doneWithItsPermits = connection.exiting || lastKind.equals("stop") && connection.stopped == stopNumber;
            if (!doneWithItsPermits && connection.permitted.isPresent()) {
                permitsOfTheGone = Optional.of(later(permitsOfTheGone, connection.permitted.get()));
            }
            posix.close(connection.fd);
            LOG.infof("lilbee's supervisor (pid %d) left the switch socket (%s)", connection.peer.pid(), why);
        } else if (pending.remove(connection)) {
            posix.close(connection.fd);
            LOG.debugf("A connection of pid %d to the switch socket closed (%s)", connection.peer.pid(), why);
        }
    }

    /** A reason as one line of printable ASCII, at most 200 characters: it ends up in lilbee's container log. */
    private static String printable(String reason) {
        StringBuilder line = new StringBuilder();
        for (char c : reason.toCharArray()) {
            if (line.length() >= 200) {
                break;
            }
            line.append(c >= 0x20 && c < 0x7f ? c : '?');
        }
        return line.toString();
    }

    /** Stops listening, lets every connection go, and takes the socket away if it is still this warden's. */
    @Override
    public void close() {
        takeOfferedGate().ifPresent(posix::close);
        for (SwitchConnection connection : List.copyOf(pending)) {
            drop(connection, "warden stops");
        }
        if (supervisor != null) {
            drop(supervisor, "warden stops");
        }
        socket.close();
    }
}
