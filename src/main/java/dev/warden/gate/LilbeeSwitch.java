package dev.warden.gate;

import dev.warden.gate.GateAction.Word;
import dev.warden.lock.FileId;
import dev.warden.lock.Posix;
import dev.warden.lock.ProcLocks;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
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
 * ({@code lilbee <pid> <start ticks> <launched>} or {@code lilbee none}) and the end of the permit it holds
 * ({@code permit <until>}, 0 for none) and the lilbee it has prepared, its modules loaded, for a permit to start
 * in ({@code warm <pid>} or {@code warm none}: a supervisor of an earlier version says nothing of it), asks warden to
 * step down when it is SIGTERMed ({@code step-down}: its pod, or its container, is going away), says {@code exiting}
 * last when it exits with its lilbee gone, and, to a warden restarted beside a running lilbee, gives the gate lock back
 * ({@code gate}, with the descriptor). The socket is warden's
 * UID's alone (mode 0600), and a peer of another UID is not listened to.
 *
 * <p>Everything here is non-blocking and runs on the gate keeper's thread, once a round; what a supervisor sends is
 * capped per line and per connection, and a supervisor that does not read is let go.
 */
public final class LilbeeSwitch implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(LilbeeSwitch.class);
    static final int PROTOCOL = 1;
    /** A supervisor's line is a few dozen bytes: more is not a supervisor. */
    private static final int MAX_LINE = 512;
    /** Unsent bytes a connection may hold before its supervisor counts as not reading. */
    private static final int MAX_OUTBOX = 4096;
    private static final int MAX_CONNECTIONS = 4;
    /** How often a word is said again though it has not changed: permits are renewed well within their length. */
    static final Duration REPEAT = Duration.ofMillis(500);

    private final Posix posix;
    private final Path path;
    private final int uid;
    private final int listener;
    /** The socket's own file, so that warden takes away only its own when it stops. */
    private final Optional<FileId> socketFile;
    private final List<Connection> connections = new ArrayList<>();
    private Optional<Report> report = Optional.empty();
    private int offeredGate = -1;
    /** Each stop said after something else is numbered: a supervisor answers it once it is done. */
    private long stopNumber;
    private String lastKind = "";
    /** Whether the last supervisor to leave said {@code exiting} first (it left no lilbee behind). */
    private boolean lastLeftExiting;
    /** A supervisor said {@code step-down} since the last {@link #takeStepDown()}. */
    private boolean stepDownHeard;

    /**
     * What the supervisor last reported: the lilbee it runs, if any, the end of the permit it holds, if any, and the pid
     * of the process it has prepared to run lilbee in on the next permit, if any (status only: it holds nothing).
     */
    public record Report(Optional<Running> lilbee, Optional<Moment> permit, OptionalLong warm) {
        static final Report NOTHING = new Report(Optional.empty(), Optional.empty(), OptionalLong.empty());
    }

    /** A lilbee as its supervisor names it: pid, start time in clock ticks, and when it was started (monotonic). */
    public record Running(long pid, long startTicks, Moment launched) {
    }

    private final class Connection {
        final int fd;
        final StringBuilder in = new StringBuilder();
        byte[] out = new byte[0];
        boolean greeted;
        Optional<Report> report = Optional.empty();
        String lastWord = "";
        Moment lastSaid;
        /** The last stop this supervisor answered as done ({@code stopped <n>}). */
        long stopped;
        /** It said it exits ({@code exiting}): its lilbee is gone and it starts no other. */
        boolean exiting;

        Connection(int fd) {
            this.fd = fd;
        }
    }

    private LilbeeSwitch(Posix posix, Path path, int uid, int listener, Optional<FileId> socketFile) {
        this.posix = posix;
        this.path = path;
        this.uid = uid;
        this.listener = listener;
        this.socketFile = socketFile;
    }

    /**
     * Listens at {@code path}, replacing whatever is there (a previous run's socket, or another process's): bound
     * under a name of its own, made warden's UID's alone, then renamed over the path.
     */
    public static LilbeeSwitch open(Posix posix, Path path, int uid) throws IOException {
        Path dir = path.toAbsolutePath().getParent();
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new IOException("cannot create " + dir + " for the switch socket (" + e.getMessage() + "): set"
                    + " warden.gate.supervisor.socket to a path on a volume only warden's and lilbee's containers mount", e);
        }
        Path bound = dir.resolve(".switch-" + ProcessHandle.current().pid() + ".sock");
        Files.deleteIfExists(bound);
        int fd;
        try {
            fd = posix.listenUnix(bound.toString(), MAX_CONNECTIONS);
        } catch (Posix.ErrnoException e) {
            throw new IOException("cannot listen at " + bound + ": " + e.getMessage() + ". Set warden.gate.supervisor.socket"
                    + " to a shorter path on a writable volume", e);
        }
        Optional<FileId> socketFile = ProcLocks.idOf(bound);
        try {
            Files.setPosixFilePermissions(bound, PosixFilePermissions.fromString("rw-------"));
            Files.move(bound, path, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            posix.close(fd);
            Files.deleteIfExists(bound);
            throw new IOException("cannot put the switch socket at " + path + ": " + e.getMessage(), e);
        }
        return new LilbeeSwitch(posix, path, uid, fd, socketFile);
    }

    public Path path() {
        return path;
    }

    /** Takes in new supervisors and what each sent since the last round. */
    public void poll(Moment now) {
        acceptAll(now);
        for (Connection connection : List.copyOf(connections)) {
            read(connection);
        }
        report = connections.reversed().stream().filter(c -> c.greeted && c.report.isPresent()).findFirst()
                .flatMap(c -> c.report);
    }

    /** Whether a supervisor is connected and has said hello. */
    public boolean connected() {
        return connections.stream().anyMatch(c -> c.greeted);
    }

    /**
     * Whether the last stop said is done: every supervisor connected has answered it (no lilbee runs, no permit held)
     * or said it exits, or, none connected, the last to leave said it exited. False before any stop, and while none is
     * connected otherwise (a supervisor out of reach may still hold a permit).
     */
    public boolean stopDone() {
        if (!lastKind.equals("stop")) {
            return false;
        }
        List<Connection> greeted = connections.stream().filter(c -> c.greeted).toList();
        return greeted.isEmpty() ? lastLeftExiting : greeted.stream().allMatch(c -> c.exiting || c.stopped == stopNumber);
    }

    /** Whether a supervisor asked warden to step down since the last call (each request is taken once). */
    public boolean takeStepDown() {
        boolean heard = stepDownHeard;
        stepDownHeard = false;
        return heard;
    }

    /** The newest supervisor's last report. */
    public Optional<Report> report() {
        return report;
    }

    /**
     * A gate lock a supervisor gave back (its lilbee holds it), now this warden's descriptor to adopt or close; each
     * is handed out once.
     */
    public OptionalInt takeOfferedGate() {
        int fd = offeredGate;
        offeredGate = -1;
        return fd < 0 ? OptionalInt.empty() : OptionalInt.of(fd);
    }

    /**
     * Tells every supervisor {@code word}: at once when it is news to it, else every {@link #REPEAT}. A start goes with
     * {@code gateFd} (when there is one: not where the Lease alone elects).
     */
    public void say(Word word, Moment now, OptionalInt gateFd) {
        if (word instanceof Word.Stop && !lastKind.equals("stop")) {
            stopNumber++;
        }
        String line = switch (word) {
            case Word.Start start -> "start " + start.until().nanos();
            case Word.Go go -> "go " + go.until().nanos();
            case Word.Stop stop -> "stop " + stopNumber + " " + printable(stop.reason());
            case Word.Silent silent -> null;
        };
        if (line == null) {
            return;
        }
        String kind = line.substring(0, line.indexOf(' '));
        lastKind = kind;
        for (Connection connection : List.copyOf(connections)) {
            if (!connection.greeted) {
                continue;
            }
            boolean news = !connection.lastWord.equals(kind) || connection.lastSaid == null
                    || now.since(connection.lastSaid).compareTo(REPEAT) >= 0;
            if (news) {
                connection.lastWord = kind;
                connection.lastSaid = now;
                send(connection, line + "\n", word instanceof Word.Start ? gateFd.orElse(-1) : -1);
            }
        }
    }

    private void acceptAll(Moment now) {
        while (true) {
            int fd;
            try {
                fd = posix.accept(listener);
            } catch (Posix.ErrnoException e) {
                LOG.warnf("The switch socket %s could not take a connection: %s", path, e.getMessage());
                return;
            }
            if (fd < 0) {
                return;
            }
            try {
                Posix.Peer peer = posix.peer(fd);
                if (peer.uid() != uid) {
                    LOG.warnf("A process of UID %d (pid %d) connected to the switch socket %s: only warden's UID (%d) may;"
                            + " not listened to", peer.uid(), peer.pid(), path, uid);
                    posix.close(fd);
                    continue;
                }
            } catch (Posix.ErrnoException e) {
                posix.close(fd);
                continue;
            }
            if (connections.size() >= MAX_CONNECTIONS) {
                drop(connections.getFirst(), "a newer supervisor connected");
            }
            Connection connection = new Connection(fd);
            connections.add(connection);
            send(connection, "hello " + PROTOCOL + " " + now.nanos() + "\n", -1);
        }
    }

    private void read(Connection connection) {
        while (connections.contains(connection)) {
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
            if (received.bytes().length == 0) {
                closeAll(received.fds());
                drop(connection, "it closed the connection");
                return;
            }
            List<Integer> fds = new ArrayList<>();
            for (int fd : received.fds()) {
                fds.add(fd);
            }
            connection.in.append(new String(received.bytes(), StandardCharsets.US_ASCII));
            int newline;
            while ((newline = connection.in.indexOf("\n")) >= 0) {
                String line = connection.in.substring(0, newline);
                connection.in.delete(0, newline + 1);
                hear(connection, line, fds);
            }
            closeAll(fds.stream().mapToInt(Integer::intValue).toArray());
            if (connection.in.length() > MAX_LINE) {
                drop(connection, "a line longer than " + MAX_LINE + " bytes");
            }
        }
    }

    private void hear(Connection connection, String line, List<Integer> fds) {
        String[] words = line.trim().split(" ");
        try {
            switch (words[0]) {
                case "hello" -> {
                    if (words.length >= 2 && Integer.parseInt(words[1]) == PROTOCOL) {
                        connection.greeted = true;
                    } else {
                        drop(connection, "it speaks another version of the switch's protocol");
                    }
                }
                case "lilbee" -> {
                    Report last = connection.report.orElse(Report.NOTHING);
                    if (words.length == 2 && words[1].equals("none")) {
                        connection.report = Optional.of(new Report(Optional.empty(), last.permit(), last.warm()));
                    } else if (words.length == 4) {
                        connection.report = Optional.of(new Report(Optional.of(new Running(Long.parseLong(words[1]),
                                Long.parseLong(words[2]), new Moment(Long.parseLong(words[3])))), last.permit(), last.warm()));
                    }
                }
                case "permit" -> {
                    if (words.length == 2) {
                        long until = Long.parseLong(words[1]);
                        Report last = connection.report.orElse(Report.NOTHING);
                        connection.report = Optional.of(new Report(last.lilbee(), until == 0 ? Optional.empty()
                                : Optional.of(new Moment(until)), last.warm()));
                    }
                }
                case "warm" -> {
                    if (words.length == 2) {
                        Report last = connection.report.orElse(Report.NOTHING);
                        connection.report = Optional.of(new Report(last.lilbee(), last.permit(),
                                words[1].equals("none") ? OptionalLong.empty() : OptionalLong.of(Long.parseLong(words[1]))));
                    }
                }
                case "stopped" -> {
                    if (words.length == 2) {
                        connection.stopped = Long.parseLong(words[1]);
                    }
                }
                case "exiting" -> connection.exiting = true;
                case "step-down" -> stepDownHeard |= connection.greeted;
                case "gate" -> {
                    if (connection.greeted && !fds.isEmpty()) {
                        if (offeredGate >= 0) {
                            posix.close(offeredGate);
                        }
                        offeredGate = fds.removeFirst();
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

    private void send(Connection connection, String text, int passFd) {
        byte[] bytes = text.getBytes(StandardCharsets.US_ASCII);
        if (connection.out.length > 0) {
            // Something is still waiting: this goes after it, whole, and a start's descriptor with its own first byte.
            flush(connection);
            if (connection.out.length > 0) {
                if (connection.out.length + bytes.length > MAX_OUTBOX) {
                    drop(connection, "it has not read what warden said");
                } else if (passFd < 0) {
                    connection.out = concat(connection.out, bytes);
                }
                return;
            }
        }
        try {
            long sent = posix.send(connection.fd, bytes, passFd);
            if (sent < bytes.length) {
                connection.out = Arrays.copyOfRange(bytes, (int) Math.max(sent, 0), bytes.length);
                if (sent < 0 && passFd >= 0) {
                    // Nothing went, so neither did the descriptor: the start is said again next round.
                    connection.out = new byte[0];
                    connection.lastWord = "";
                }
            }
        } catch (Posix.ErrnoException e) {
            drop(connection, e.getMessage());
        }
    }

    private void flush(Connection connection) {
        try {
            long sent = posix.send(connection.fd, connection.out, -1);
            if (sent > 0) {
                connection.out = Arrays.copyOfRange(connection.out, (int) sent, connection.out.length);
            }
        } catch (Posix.ErrnoException e) {
            drop(connection, e.getMessage());
        }
    }

    private void drop(Connection connection, String why) {
        if (connections.remove(connection)) {
            posix.close(connection.fd);
            if (connection.greeted) {
                lastLeftExiting = connection.exiting;
                LOG.infof("lilbee's supervisor left the switch socket (%s)", why);
            }
        }
    }

    private void closeAll(int[] fds) {
        for (int fd : fds) {
            posix.close(fd);
        }
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] both = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, both, a.length, b.length);
        return both;
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

    /** Stops listening, lets every supervisor go, and takes the socket away if it is still this warden's. */
    @Override
    public void close() {
        for (Connection connection : List.copyOf(connections)) {
            drop(connection, "warden stops");
        }
        takeOfferedGate().ifPresent(posix::close);
        posix.close(listener);
        try {
            if (socketFile.isPresent() && socketFile.equals(ProcLocks.idOf(path))) {
                Files.deleteIfExists(path);
            }
        } catch (IOException e) {
            // left behind: the next warden replaces it
        }
    }
}
