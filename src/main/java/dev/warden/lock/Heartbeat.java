package dev.warden.lock;

import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One record of a lock's heartbeat file ({@code <lock>.heartbeat} beside the lock): which holder wrote it, its pod, the
 * lock domain it holds the lock in (its kernel and the device its mount shows the file on: holders of one domain meet in
 * one lock table, whatever the volume), the generation of its hold (one more than the record it found when it took the
 * lock, so a later holder has a higher one) and a beat counter that advances while it holds the lock. A holder that lets
 * go writes a last record, released.
 *
 * <p>Any process that can write the volume can write this file too: a record decides nothing on its own. A forged one can
 * only keep a warden from serving, as taking the lock itself could.
 *
 * @param holder this hold's token: the pod and a nonce of the process's run
 * @param pod the pod that wrote it, for a person reading the file
 */
public record Heartbeat(String holder, String pod, String domain, long generation, long beat, boolean released) {

    /** A record is one short line; a file longer than this is not one. */
    public static final int MAX_BYTES = 512;
    /** No generation reaches this: one above it would not parse. A record claiming more is not one. */
    private static final long MAX_GENERATION = 100_000_000_000_000_000L;
    /**
     * Something at the path that is not a record, or cannot be read: a holder of another domain might be behind it, so a
     * taker waits for it to stay as it is; a holder that beats ignores it.
     */
    public static final Heartbeat UNREADABLE = new Heartbeat("unreadable", "unreadable", "unreadable", 0, 0, false);
    private static final String TOKEN = "[A-Za-z0-9._:-]{1,160}";
    private static final Pattern LINE = Pattern.compile("warden-heartbeat 1 holder=(" + TOKEN + ") pod=(" + TOKEN
            + ") domain=(" + TOKEN + ") generation=(\\d{1,18}) beat=(\\d{1,18}) state=(held|released)\n?");

    public Heartbeat {
        if (!holder.matches(TOKEN) || !pod.matches(TOKEN) || !domain.matches(TOKEN) || generation < 0 || beat < 0) {
            throw new IllegalArgumentException("not a heartbeat's holder, pod, domain or counters");
        }
    }

    public byte[] bytes() {
        return ("warden-heartbeat 1 holder=" + holder + " pod=" + pod + " domain=" + domain + " generation=" + generation
                + " beat=" + beat + " state=" + (released ? "released" : "held") + "\n").getBytes(StandardCharsets.US_ASCII);
    }

    /** The record in {@code bytes}; empty when they are not one (half written, too long, another writer's). */
    public static Optional<Heartbeat> parse(byte[] bytes) {
        if (bytes.length > MAX_BYTES) {
            return Optional.empty();
        }
        Matcher m = LINE.matcher(new String(bytes, StandardCharsets.US_ASCII));
        if (!m.matches()) {
            return Optional.empty();
        }
        long generation = Long.parseLong(m.group(4));
        if (generation >= MAX_GENERATION) {
            return Optional.empty();
        }
        return Optional.of(new Heartbeat(m.group(1), m.group(2), m.group(3), generation, Long.parseLong(m.group(5)),
                m.group(6).equals("released")));
    }

    /** The next beat of this hold. */
    public Heartbeat next() {
        return new Heartbeat(holder, pod, domain, generation, beat + 1, false);
    }

    /** This hold's last record: let go. */
    Heartbeat letGo() {
        return new Heartbeat(holder, pod, domain, generation, beat + 1, true);
    }

    /**
     * Whether the holder that wrote this record came after {@code other}'s: a higher generation, or on a tie (two holders
     * that took the lock from one record) the greater token, so both sides agree which one was first.
     */
    public boolean laterThan(Heartbeat other) {
        return generation != other.generation ? generation > other.generation : holder.compareTo(other.holder) > 0;
    }
}
