package dev.warden.gate.pod;

import dev.warden.lock.Posix;
import dev.warden.time.Moment;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Optional;

/**
 * One connection to the switch: its peer as the kernel named it, the bytes read and not yet a line, the bytes said and
 * not yet sent, and what its peer has said and been told.
 */
final class SwitchConnection {

    /** Unsent bytes a connection may hold before its supervisor counts as not reading. */
    private static final int MAX_OUTBOX = 4096;

    final int fd;
    final Posix.Peer peer;
    final Moment accepted;
    final StringBuilder in = new StringBuilder();
    private byte[] out = new byte[0];
    Optional<SupervisorReport> report = Optional.empty();
    String lastWord = "";
    Moment lastSaid;
    /** The last stop said on this connection: only its answer counts. */
    long stopSaid;
    /** The last stop this supervisor answered as done ({@code stopped <n>}). */
    long stopped;
    /** It said it exits ({@code exiting}): its lilbee is gone and it starts no other. */
    boolean exiting;
    /** It said {@code step-down}: SIGTERMed, it is going away. Said once; more is not listened to. */
    boolean terminating;
    /** The latest end of a permit said to it. */
    Optional<Moment> permitted = Optional.empty();
    /** A descriptor it passed, for the next line it completes to claim if that is its gate line; -1: none. */
    int passed = -1;

    SwitchConnection(int fd, Posix.Peer peer, Moment accepted) {
        this.fd = fd;
        this.peer = peer;
        this.accepted = accepted;
    }

    /**
     * Sends {@code text}, with {@code passFd} when there is one, after whatever still waits; what the kernel does not
     * take waits for the next send. A descriptor is never queued: a start behind bytes still waiting is not sent at all,
     * and the switch says it again (its words are repeated every {@link LilbeeSwitch#REPEAT}). Empty when sent, waiting
     * or so left out; else why the connection must go (its peer does not read, or the socket failed).
     */
    Optional<String> send(Posix posix, String text, int passFd) {
        byte[] bytes = text.getBytes(StandardCharsets.US_ASCII);
        if (out.length > 0) {
            // Something is still waiting: this goes after it, whole, and a start's descriptor with its own first byte.
            Optional<String> failed = flush(posix);
            if (failed.isPresent()) {
                return failed;
            }
            if (out.length > 0) {
                if (out.length + bytes.length > MAX_OUTBOX) {
                    return Optional.of("it has not read what warden said");
                }
                if (passFd < 0) {
                    out = concat(out, bytes);
                }
                return Optional.empty();
            }
        }
        try {
            long sent = posix.send(fd, bytes, passFd);
            if (sent < bytes.length) {
                out = Arrays.copyOfRange(bytes, (int) Math.max(sent, 0), bytes.length);
                if (sent < 0 && passFd >= 0) {
                    // Nothing went, so neither did the descriptor: the start is said again next round.
                    out = new byte[0];
                    lastWord = "";
                }
            }
            return Optional.empty();
        } catch (Posix.ErrnoException e) {
            return Optional.of(e.getMessage());
        }
    }

    private Optional<String> flush(Posix posix) {
        try {
            long sent = posix.send(fd, out, -1);
            if (sent > 0) {
                out = Arrays.copyOfRange(out, (int) sent, out.length);
            }
            return Optional.empty();
        } catch (Posix.ErrnoException e) {
            return Optional.of(e.getMessage());
        }
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] both = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, both, a.length, b.length);
        return both;
    }
}
