package dev.warden.gate.pod;

import dev.warden.lock.CheckedDir;
import dev.warden.lock.FileId;
import dev.warden.lock.Posix;
import dev.warden.lock.ProcFs;
import dev.warden.time.Moment;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import org.jboss.logging.Logger;

/**
 * The switch's listening socket, kept at its path: bound under a name of this warden's own in the same directory, made
 * warden's UID's alone, then renamed over the path (replacing a previous run's socket, or another process's), and put
 * back whenever another file is found there.
 */
final class SwitchSocket implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(SwitchSocket.class);
    /** The listener's backlog: the supervisor connects alone; the rest are refused as they come. */
    private static final int BACKLOG = 8;
    /** How often a replaced socket is logged at most: a process renaming over it in a loop must not fill the log. */
    private static final Duration LOGGED_EVERY = Duration.ofSeconds(10);

    private final Posix posix;
    private final Path path;
    /** The name it is bound at before it is renamed over the path. */
    private final String bound;
    private int listener;
    /** The socket's own file, so that warden takes away only its own when it stops, and puts it back when replaced. */
    private FileId file;
    private Moment replacedLoggedAt;

    private SwitchSocket(Posix posix, Path path, String bound, Listening listening) {
        this.posix = posix;
        this.path = path;
        this.bound = bound;
        this.listener = listening.fd();
        this.file = listening.file();
    }

    /** The socket listening at the path, and its own file. */
    private record Listening(int fd, FileId file) {
    }

    /** Listens at {@code path}, its directory created if missing. */
    static SwitchSocket open(Posix posix, ProcFs procs, Path path) throws IOException {
        Path absolute = path.toAbsolutePath();
        Path dir = absolute.getParent();
        try {
            CheckedDir.createDirectories(posix, dir);
        } catch (IOException e) {
            throw new IOException("cannot create " + dir + " for the switch socket (" + e.getMessage() + "): set"
                    + " warden.gate.supervisor.socket to a path on a volume only warden's and lilbee's containers mount", e);
        }
        String bound = dir.resolve(".switch-" + procs.self() + ".sock").toString();
        return new SwitchSocket(posix, absolute, bound, listen(posix, absolute, bound));
    }

    /** A socket bound at {@code bound}, made this UID's alone, then renamed over {@code path}. */
    private static Listening listen(Posix posix, Path path, String bound) throws IOException {
        unlinkIfThere(posix, bound);
        int fd;
        try {
            fd = posix.listenUnix(bound, BACKLOG);
        } catch (Posix.ErrnoException e) {
            throw new IOException("cannot listen at " + bound + ": " + e.getMessage() + ". Set warden.gate.supervisor.socket"
                    + " to a shorter path on a writable volume", e);
        }
        try {
            FileId socketFile = posix.statAt(Posix.AT_FDCWD, bound).id();
            posix.chmodAt(Posix.AT_FDCWD, bound, 0600);
            posix.renameAt(Posix.AT_FDCWD, bound, path.toString());
            return new Listening(fd, socketFile);
        } catch (IOException e) {
            posix.close(fd);
            unlinkIfThere(posix, bound);
            throw new IOException("cannot put the switch socket at " + path + ": " + e.getMessage(), e);
        }
    }

    private static void unlinkIfThere(Posix posix, String name) {
        try {
            posix.unlinkAt(Posix.AT_FDCWD, name);
        } catch (Posix.ErrnoException e) {
            // left behind: listening there fails, and says so
        }
    }

    Path path() {
        return path;
    }

    /** A connection waiting to be accepted, or -1 when none is. */
    int accept() throws Posix.ErrnoException {
        return posix.accept(listener);
    }

    /**
     * Puts this warden's socket back at the path when another file is there: a process that can write the directory
     * (lilbee's container, where a runtime ignores its read-only mount) can rename one of its own over it, and a
     * supervisor that reconnects would never reach warden again. It does not believe what it finds there (it is not
     * warden), but it must find warden. Connections already accepted stay: their sockets are not the path's.
     */
    void keep(Moment now) {
        try {
            if (file.equals(posix.statAt(Posix.AT_FDCWD, path.toString()).id())) {
                return;
            }
        } catch (Posix.ErrnoException e) {
            // none there: put it back
        }
        try {
            Listening fresh = listen(posix, path, bound);
            posix.close(listener);
            listener = fresh.fd();
            file = fresh.file();
            if (replacedLoggedAt == null || now.since(replacedLoggedAt).compareTo(LOGGED_EVERY) >= 0) {
                replacedLoggedAt = now;
                LOG.warnf("The switch socket %s had been replaced or removed (a process of warden's UID that can write %s):"
                        + " warden's is back", path, path.getParent());
            }
        } catch (IOException e) {
            if (replacedLoggedAt == null || now.since(replacedLoggedAt).compareTo(LOGGED_EVERY) >= 0) {
                replacedLoggedAt = now;
                LOG.warnf("The switch socket %s was replaced, and warden's cannot be put back: %s", path, e.getMessage());
            }
        }
    }

    /** Stops listening, and takes the socket away if it is still this warden's. */
    @Override
    public void close() {
        posix.close(listener);
        try {
            if (file.equals(posix.statAt(Posix.AT_FDCWD, path.toString()).id())) {
                posix.unlinkAt(Posix.AT_FDCWD, path.toString());
            }
        } catch (Posix.ErrnoException e) {
            // gone, or left behind: the next warden replaces it
        }
    }
}
