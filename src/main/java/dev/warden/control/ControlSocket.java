package dev.warden.control;

import dev.warden.gate.pod.GateKeeper;
import dev.warden.lock.FileLocker;
import dev.warden.lock.Posix;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Semaphore;
import jdk.net.ExtendedSocketOptions;
import org.jboss.logging.Logger;

/**
 * Where {@code warden step-down} reaches the warden serving in its container: a Unix socket, mode 0600, in a directory
 * only warden's container mounts, answering a peer of warden's own UID alone (SO_PEERCRED). No token, and nothing a
 * port squatter could take it for: a TCP port of the pod is anyone's while warden is down. One line in ({@code
 * step-down <wait seconds>}), one line out ({@code <outcome> <reason>}, see {@link Outcome}), then closed; a few
 * connections at a time, each cut off after its deadline.
 */
public final class ControlSocket implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(ControlSocket.class);
    static final int MAX_LINE = 256;
    static final int MAX_ANSWER = 4096;
    private static final int MAX_CONNECTIONS = 4;
    /** The longest a step-down may be waited for. */
    public static final int MAX_WAIT_SECONDS = 60;

    /** What a step-down came to, as the first word of the answer. */
    public enum Outcome {
        STEPPED_DOWN("stepped-down"), STEPPING("stepping"), NOT_ELECTED("not-elected"), REFUSED("refused");

        private final String word;

        Outcome(String word) {
            this.word = word;
        }

        public String word() {
            return word;
        }

        public static Outcome of(String word) {
            for (Outcome outcome : values()) {
                if (outcome.word.equals(word)) {
                    return outcome;
                }
            }
            return REFUSED;
        }
    }

    private final Path path;
    private final ServerSocketChannel server;
    private final UserPrincipal owner;
    private final GateKeeper gate;
    private final Semaphore slots = new Semaphore(MAX_CONNECTIONS);
    private final Thread acceptor;

    private ControlSocket(Path path, ServerSocketChannel server, UserPrincipal owner, GateKeeper gate) {
        this.path = path;
        this.server = server;
        this.owner = owner;
        this.gate = gate;
        this.acceptor = Thread.ofVirtual().name("control-socket").start(this::accept);
    }

    /**
     * Listens at {@code path} (bound under a name of its own, made warden's alone, then renamed over it), in a directory
     * that is warden's own and nobody else may write: else another user could swap the socket for one of its own
     * between the bind and the look at its owner, whom the socket then answers.
     */
    public static ControlSocket open(Path path, GateKeeper gate, Posix posix) throws IOException {
        Path dir = path.toAbsolutePath().getParent();
        try {
            Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        } catch (IOException e) {
            throw new IOException("cannot create " + dir + " for the control socket (" + e.getMessage() + "): set"
                    + " warden.gate.control-socket to a path in a directory only warden's container mounts", e);
        }
        ownedByWardenAlone(dir);
        Path bound = dir.resolve(".control-" + ProcessHandle.current().pid() + ".sock");
        Files.deleteIfExists(bound);
        ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        try {
            server.bind(UnixDomainSocketAddress.of(bound), MAX_CONNECTIONS);
            // By name, never through a link a process of warden's UID (through /proc/<pid>/root) swapped in since the bind.
            posix.chmodAt(Posix.AT_FDCWD, bound.toString(), 0600);
            UserPrincipal owner = Files.getOwner(bound, LinkOption.NOFOLLOW_LINKS);
            Files.move(bound, path, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            return new ControlSocket(path, server, owner, gate);
        } catch (IOException e) {
            server.close();
            Files.deleteIfExists(bound);
            throw new IOException("cannot listen at " + path + " for warden step-down: " + e.getMessage() + ". Set"
                    + " warden.gate.control-socket to a writable path", e);
        }
    }

    /** {@code dir} is a directory (not a link to one) of warden's own UID, which no group or other user may write. */
    private static void ownedByWardenAlone(Path dir) throws IOException {
        // One look at one file: two looks could each see a different directory swapped in between.
        Map<String, Object> attributes = Files.readAttributes(dir, "unix:isDirectory,uid,mode", LinkOption.NOFOLLOW_LINKS);
        int groupOrOthersWrite = 0022;
        if (!Boolean.TRUE.equals(attributes.get("isDirectory"))
                || !String.valueOf(attributes.get("uid")).equals(FileLocker.currentUid())
                || ((Integer) attributes.get("mode") & groupOrOthersWrite) != 0) {
            throw new IOException(dir + " is not a directory of warden's own (UID " + FileLocker.currentUid() + ") that no"
                    + " one else may write, so the control socket cannot be trusted there: set warden.gate.control-socket to a"
                    + " path in such a directory (the chart's /tmp is warden's container's alone)");
        }
    }

    private void accept() {
        while (server.isOpen()) {
            SocketChannel peer;
            try {
                peer = server.accept();
            } catch (IOException e) {
                if (server.isOpen()) {
                    LOG.warnf("The control socket %s could not take a connection: %s", path, e.getMessage());
                }
                return;
            }
            if (!slots.tryAcquire()) {
                close(peer);
                continue;
            }
            Thread.ofVirtual().name("control-peer").start(() -> {
                try {
                    answer(peer);
                } finally {
                    close(peer);
                    slots.release();
                }
            });
        }
    }

    private void answer(SocketChannel peer) {
        try {
            UserPrincipal who = peer.getOption(ExtendedSocketOptions.SO_PEERCRED).user();
            if (!who.equals(owner)) {
                reply(peer, Outcome.REFUSED, "only warden's own user may ask it to step down");
                return;
            }
            // The read is bounded in time as in size: a peer that says nothing is let go.
            Thread cutoff = Thread.ofVirtual().start(() -> {
                try {
                    Thread.sleep(Duration.ofSeconds(5));
                    close(peer);
                } catch (InterruptedException e) {
                    // answered in time
                }
            });
            String line = readLine(peer);
            cutoff.interrupt();
            String[] words = line == null ? new String[0] : line.trim().split(" ");
            if (words.length != 2 || !words[0].equals("step-down")) {
                reply(peer, Outcome.REFUSED, "not a request this socket knows: send step-down <wait seconds>");
                return;
            }
            int wait;
            try {
                wait = Integer.parseInt(words[1]);
            } catch (NumberFormatException e) {
                wait = -1;
            }
            if (wait < 0 || wait > MAX_WAIT_SECONDS) {
                reply(peer, Outcome.REFUSED, "the wait must be 0 to " + MAX_WAIT_SECONDS + " seconds");
                return;
            }
            LOG.info("Asked to step down through the control socket (warden step-down)");
            switch (gate.stepDown(Duration.ofSeconds(wait))) {
                case GateKeeper.StepDown.SteppedDown done -> reply(peer, Outcome.STEPPED_DOWN, done.reason());
                case GateKeeper.StepDown.Stepping stepping -> reply(peer, Outcome.STEPPING, stepping.reason());
                case GateKeeper.StepDown.NotElected not -> reply(peer, Outcome.NOT_ELECTED, not.reason());
            }
        } catch (IOException e) {
            // the peer went away
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** One line of at most {@link #MAX_LINE} bytes; null when the peer sent none. */
    private static String readLine(SocketChannel peer) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(MAX_LINE);
        while (buffer.hasRemaining()) {
            int start = buffer.position();
            if (peer.read(buffer) < 0) {
                break;
            }
            for (int i = start; i < buffer.position(); i++) {
                if (buffer.get(i) == '\n') {
                    return new String(buffer.array(), 0, i, StandardCharsets.UTF_8);
                }
            }
        }
        return null;
    }

    private static void reply(SocketChannel peer, Outcome outcome, String reason) throws IOException {
        write(peer, outcome.word() + " " + reason.replaceAll("[\\r\\n]", " "));
    }

    /** {@code line} and a newline, cut to {@link #MAX_ANSWER} bytes. */
    private static void write(SocketChannel channel, String line) throws IOException {
        byte[] bytes = (line + "\n").getBytes(StandardCharsets.UTF_8);
        ByteBuffer buffer = ByteBuffer.wrap(bytes, 0, Math.min(bytes.length, MAX_ANSWER));
        while (buffer.hasRemaining()) {
            channel.write(buffer);
        }
    }

    /** The answer to a request: its outcome, and the reason the serving warden gave. */
    public record Answer(Outcome outcome, String reason) {
    }

    /**
     * Asks the warden listening at {@code path} to step down, waiting up to {@code waitSeconds} for it to hand the gate
     * over; the connection is cut off some seconds after that.
     */
    public static Answer stepDown(Path path, int waitSeconds) throws IOException {
        try (SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            channel.connect(UnixDomainSocketAddress.of(path));
            Thread cutoff = Thread.ofVirtual().start(() -> {
                try {
                    Thread.sleep(Duration.ofSeconds(waitSeconds + 10L));
                    close(channel);
                } catch (InterruptedException e) {
                    // answered in time
                }
            });
            try {
                write(channel, "step-down " + waitSeconds);
                ByteBuffer buffer = ByteBuffer.allocate(MAX_ANSWER);
                while (buffer.hasRemaining() && channel.read(buffer) >= 0) {
                    // until the warden closes, or the answer fills the buffer
                }
                String answer = new String(buffer.array(), 0, buffer.position(), StandardCharsets.UTF_8).strip();
                if (answer.isEmpty()) {
                    throw new IOException("the warden at " + path + " closed without an answer");
                }
                int space = answer.indexOf(' ');
                return space < 0 ? new Answer(Outcome.of(answer), "")
                        : new Answer(Outcome.of(answer.substring(0, space)), answer.substring(space + 1));
            } finally {
                cutoff.interrupt();
            }
        }
    }

    private static void close(SocketChannel peer) {
        try {
            peer.close();
        } catch (IOException e) {
            // closed already
        }
    }

    @Override
    public void close() {
        try {
            server.close();
            Files.deleteIfExists(path);
        } catch (IOException e) {
            LOG.debugf("Closing the control socket %s: %s", path, e.getMessage());
        }
        acceptor.interrupt();
    }
}
