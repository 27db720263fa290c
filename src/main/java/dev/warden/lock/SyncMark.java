package dev.warden.lock;

import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Properties;
import java.util.UUID;

/**
 * lilbee's sync mark: filelock's {@code ReadWriteLock}, a SQLite database whose transactions are
 * the lock. Syncs and imports share the read mark ({@code BEGIN TRANSACTION; SELECT ...}, a
 * SHARED lock); a reset takes the write mark ({@code BEGIN EXCLUSIVE TRANSACTION}) without
 * waiting. The same statements run here, through SQLite itself, on a connection of their own, so
 * warden's marks and lilbee's exclude each other.
 */
public class SyncMark {

    /** sqlite3_open_v2's flags: read-write, created when missing, and never through a symbolic link. */
    private static final int SQLITE_OPEN_READWRITE = 0x2;
    private static final int SQLITE_OPEN_CREATE = 0x4;
    private static final int SQLITE_OPEN_NOFOLLOW = 0x01000000;
    /** SQLite's "database is locked" and "table is locked" result codes: another holder. */
    private static final int SQLITE_BUSY = 5;
    private static final int SQLITE_LOCKED = 6;
    /** SQLite's "file is not a database": Python's sqlite3 raises the bare DatabaseError for it. */
    private static final int SQLITE_NOTADB = 26;
    /** sqlite3_busy_timeout takes a C int; filelock caps it below that too (about 23 days). */
    private static final long MAX_BUSY_TIMEOUT_MS = 2_000_000_000L - 1;
    /** How long lilbee's lockability probe may wait for its own fresh file: any wait means it cannot lock. */
    public static final Duration PROBE_TIMEOUT = Duration.ofMillis(300);
    /**
     * SQLite's unix VFS holds a reader's SHARED lock as a read lock, and a writer's EXCLUSIVE lock as
     * a write lock, on these bytes of the database file (sqlite3.c: PENDING_BYTE + 2, 510 bytes).
     */
    private static final long SHARED_FIRST = 0x40000000L + 2;
    private static final long SHARED_SIZE = 510;

    private final Posix posix;

    public SyncMark() {
        this(new NativePosix());
    }

    public SyncMark(Posix posix) {
        this.posix = posix;
    }

    /** The first bytes of every SQLite database; a new, empty file is one too. */
    private static final byte[] SQLITE_HEADER = "SQLite format 3\0".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    /** Who holds the mark, as {@link #holders(Path)} sees it. */
    public enum Holders {
        NOBODY, READERS, WRITER
    }

    /**
     * Who holds the mark on {@code file} now, asked of the kernel ({@code F_GETLK} on SQLite's shared
     * bytes) without taking anything: no number of looks can make a lilbee reset or sync fail, as a
     * look that took the mark for an instant could. Closing the descriptor would drop record locks
     * this process held on the file, so only a process that holds no mark of its own may look.
     *
     * @throws Unlockable when the file cannot be opened (a link, a directory) or asked about
     */
    public Holders holders(Path file) throws Unlockable {
        int fd;
        try (CheckedDir dir = CheckedDir.open(posix, file.toAbsolutePath().getParent())) {
            fd = dir.open(file.getFileName().toString(), Posix.Open.READ);
        } catch (Posix.ErrnoException e) {
            if (e.errno() == Errno.ENOENT) {
                return Holders.NOBODY;
            }
            throw new Unlockable("Cannot look at " + file + ": " + e.getMessage(), null);
        } catch (IOException e) {
            throw new Unlockable("Cannot look at " + file + ": " + reason(e), null);
        }
        try {
            byte[] head = posix.read(fd, SQLITE_HEADER.length);
            if (head.length != 0 && !Arrays.equals(head, SQLITE_HEADER)) {
                throw new Unlockable(file + " is not a database (no SQLite header), so no sync can be marked on it and"
                        + " lilbee refuses every reset. Stop every lilbee process and delete " + file + ".", null);
            }
            return switch (posix.conflictingRecordLock(fd, SHARED_FIRST, SHARED_SIZE)) {
                case NONE -> Holders.NOBODY;
                case READ -> Holders.READERS;
                case WRITE -> Holders.WRITER;
            };
        } catch (Posix.ErrnoException e) {
            throw new Unlockable("Cannot look at the locks on " + file + ": " + e.getMessage(), null);
        } finally {
            posix.close(fd);
        }
    }

    /**
     * Refuses a FIFO SQLite would block on reading and a link on the way to the file (SQLite refuses a
     * link at the file itself, {@code SQLITE_OPEN_NOFOLLOW}). Only a stat: opening and closing the file
     * here would drop the record locks of a mark this process already holds on it. A link and a directory
     * are refused with the errno lilbee's open ({@code O_NOFOLLOW}, read and write) meets there.
     */
    private void checkRegularOrAbsent(Path file) throws Unlockable {
        try (CheckedDir dir = CheckedDir.open(posix, file.toAbsolutePath().getParent())) {
            Optional<FileStat> stat = dir.stat(file.getFileName().toString());
            if (stat.isPresent() && !stat.get().isRegularFile()) {
                String type = stat.get().type();
                if (type.equals("a symbolic link")) {
                    throw Unlockable.of(file, Errno.ELOOP, "Too many levels of symbolic links");
                }
                if (type.equals("a directory")) {
                    throw Unlockable.of(file, Errno.EISDIR, "Is a directory");
                }
                throw new Unlockable(file + " is " + type + ", not a database. Remove it; lilbee creates it again.",
                        type + ", not a database", OptionalInt.empty(), false, null);
            }
        } catch (IOException e) {
            throw Unlockable.of(file, e);
        }
    }

    private static String reason(IOException e) {
        return e instanceof FileSystemException f && f.getReason() != null ? "it " + f.getReason() : e.toString();
    }

    /** A held mark; closing rolls the transaction back and closes its connection. Closing twice is harmless. */
    public static final class Held implements AutoCloseable {
        private final Connection connection;
        private boolean open = true;

        private Held(Connection connection) {
            this.connection = connection;
        }

        @Override
        public synchronized void close() {
            if (!open) {
                return;
            }
            open = false;
            try (Statement statement = connection.createStatement()) {
                statement.execute("ROLLBACK");
            } catch (SQLException e) {
                // the transaction is gone either way once the connection closes
            } finally {
                try {
                    connection.close();
                } catch (SQLException e) {
                    // nothing more to release
                }
            }
        }
    }

    /** The mark is held by another process: a reset (for a read) or a sync (for a write). */
    public static final class Busy extends Exception {
        public Busy(String message) {
            super(message);
        }
    }

    /**
     * The file cannot be locked at all: not a database, a filesystem without POSIX locks, no permission. What lilbee's
     * refusals are made of comes with it: the cause in lilbee's words ({@code [Errno 30] Read-only file system}, or
     * SQLite's own), the errno when the operating system gave one, and whether SQLite found no database there.
     *
     * @param noLocking whether a fresh file could not be locked in time: a filesystem without working locks
     */
    public static final class Unlockable extends Exception {
        private final String cause;
        private final OptionalInt errno;
        private final boolean notADatabase;
        private final boolean noLocking;

        public Unlockable(String message, Throwable cause) {
            this(message, message, OptionalInt.empty(), false, cause);
        }

        Unlockable(String message, String cause, OptionalInt errno, boolean notADatabase, Throwable thrown) {
            this(message, cause, errno, notADatabase, false, thrown);
        }

        Unlockable(String message, String cause, OptionalInt errno, boolean notADatabase, boolean noLocking,
                Throwable thrown) {
            super(message, thrown);
            this.cause = cause;
            this.errno = errno;
            this.notADatabase = notADatabase;
            this.noLocking = noLocking;
        }

        /** What the operating system said, as Python's {@code OSError} words it. */
        static Unlockable of(Path file, int errno, String description) {
            String cause = "[Errno " + errno + "] " + description;
            return new Unlockable(file + " cannot be opened (" + cause + ")", cause, OptionalInt.of(errno), false, null);
        }

        /** An I/O error: with its errno where the operating system gave one. */
        public static Unlockable of(Path file, IOException e) {
            for (Throwable t = e; t != null; t = t.getCause()) {
                if (t instanceof Posix.ErrnoException errno) {
                    return of(file, errno);
                }
            }
            return new Unlockable(file + " cannot be opened (" + reason(e) + ")", reason(e), OptionalInt.empty(), false, e);
        }

        static Unlockable of(Path file, Posix.ErrnoException e) {
            String cause = "[Errno " + e.errno() + "] " + e.description();
            return new Unlockable(file + " cannot be opened (" + cause + ")", cause, OptionalInt.of(e.errno()), false, e);
        }

        /** Why, in lilbee's words: {@code [Errno N] strerror} from the operating system, else SQLite's message. */
        public String cause() {
            return cause;
        }

        public OptionalInt errno() {
            return errno;
        }

        public boolean notADatabase() {
            return notADatabase;
        }

        public boolean noLocking() {
            return noLocking;
        }
    }

    /**
     * Takes the read mark, waiting up to {@code timeout} while a reset holds the write mark. Any
     * number of readers share it, across processes.
     */
    public Held read(Path file, Duration timeout) throws Busy, Unlockable {
        Connection connection = open(file, timeout, "a reset holds " + file);
        try (Statement statement = connection.createStatement()) {
            statement.execute("BEGIN TRANSACTION");
            try (ResultSet rows = statement.executeQuery("SELECT name FROM sqlite_schema LIMIT 1")) {
                rows.next();
            }
            return new Held(connection);
        } catch (SQLException e) {
            return fail(connection, file, e, "a reset holds " + file);
        }
    }

    /** Takes the write mark now or not at all: refused while any reader (or another writer) holds it. */
    public Held write(Path file) throws Busy, Unlockable {
        Connection connection = open(file, Duration.ZERO, "a sync, an import or a reset holds " + file);
        try (Statement statement = connection.createStatement()) {
            statement.execute("BEGIN EXCLUSIVE TRANSACTION");
            return new Held(connection);
        } catch (SQLException e) {
            return fail(connection, file, e, "a sync, an import or a reset holds " + file);
        }
    }

    /** Takes the read mark without waiting: how a look tells a running sync from a running reset. */
    public Optional<Held> tryRead(Path file) throws Unlockable {
        try {
            return Optional.of(read(file, Duration.ZERO));
        } catch (Busy e) {
            return Optional.empty();
        }
    }

    /**
     * Whether {@code dir}'s filesystem can hold a SQLite lock, as lilbee's probe asks it: a fresh
     * {@code sync.probe.<hex>} file is created (never through a link: the operating system's refusal,
     * with its errno, is what lilbee reports), then locked exclusively as a database within
     * {@link #PROBE_TIMEOUT}, then deleted (with any journal), so no probe is ever left behind.
     *
     * @return empty when it can; otherwise what went wrong ({@link Unlockable#noLocking()} when the lock
     *     of a file nobody else has was not had in time)
     */
    public Optional<Unlockable> probe(Path dir) {
        Path probe = dir.resolve("sync.probe." + UUID.randomUUID().toString().replace("-", ""));
        try {
            try (CheckedDir checked = CheckedDir.open(posix, dir)) {
                posix.close(checked.open(probe.getFileName().toString(), Posix.Open.READ_WRITE_CREATE));
            } catch (IOException e) {
                return Optional.of(Unlockable.of(probe, e));
            }
            Connection connection = open(probe, PROBE_TIMEOUT, "the probe " + probe + " is held");
            try (Statement statement = connection.createStatement()) {
                statement.execute("BEGIN EXCLUSIVE TRANSACTION");
                return Optional.empty();
            } catch (SQLException e) {
                return Optional.of(isBusy(e) ? noLocking(probe) : unlockable(probe, e));
            } finally {
                new Held(connection).close();
            }
        } catch (Busy e) {
            return Optional.of(noLocking(probe));
        } catch (Unlockable e) {
            return Optional.of(e);
        } finally {
            try (CheckedDir checked = CheckedDir.open(posix, dir)) {
                for (String suffix : new String[] {"", "-journal", "-wal", "-shm"}) {
                    checked.delete(probe.getFileName() + suffix);
                }
            } catch (IOException e) {
                // a probe that cannot be deleted is reported by the caller's next look
            }
        }
    }

    private Connection open(Path file, Duration busyTimeout, String busyMessage) throws Busy, Unlockable {
        checkRegularOrAbsent(file);
        Connection connection;
        Properties mode = new Properties();
        mode.setProperty("open_mode", Integer.toString(SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW));
        try {
            // Asked of sqlite-jdbc itself: DriverManager's service lookup finds no driver in a native image.
            connection = org.sqlite.JDBC.createConnection("jdbc:sqlite:" + file, mode);
        } catch (SQLException e) {
            throw new Unlockable(file + " cannot be opened (" + e.getMessage() + ")", e);
        }
        try (Statement statement = connection.createStatement()) {
            // Always set: the driver's own default would wait 3 s where the caller asked otherwise.
            statement.execute("PRAGMA busy_timeout=" + Math.min(MAX_BUSY_TIMEOUT_MS, Math.max(0, busyTimeout.toMillis())));
            statement.execute("PRAGMA journal_mode=MEMORY");
            return connection;
        } catch (SQLException e) {
            return fail(connection, file, e, busyMessage);
        }
    }

    /** Closes the half-opened connection and throws what {@code e} means: another holder, or no lock at all. */
    private static <T> T fail(Connection connection, Path file, SQLException e, String busyMessage) throws Busy, Unlockable {
        try {
            connection.close();
        } catch (SQLException ignored) {
            // closing releases whatever was half taken
        }
        if (isBusy(e)) {
            throw new Busy(busyMessage);
        }
        throw unlockable(file, e);
    }

    private static Unlockable noLocking(Path probe) {
        return new Unlockable(probe + " could not be locked though nothing else holds it", "the lock is never had",
                OptionalInt.empty(), false, true, null);
    }

    private static Unlockable unlockable(Path file, SQLException e) {
        String words = sqliteWords(e);
        return new Unlockable(file + " cannot be locked (" + words + ")", words, OptionalInt.empty(),
                (e.getErrorCode() & 0xff) == SQLITE_NOTADB, e);
    }

    /**
     * SQLite's own message for the error ({@code sqlite3_errmsg}), which Python's sqlite3 module gives as the exception's
     * text: sqlite-jdbc wraps it, {@code [SQLITE_NOTADB] File opened that is not a database file (file is not a database)}.
     */
    private static String sqliteWords(SQLException e) {
        String message = String.valueOf(e.getMessage());
        int open = message.lastIndexOf(" (");
        return message.endsWith(")") && open >= 0 ? message.substring(open + 2, message.length() - 1) : message;
    }

    private static boolean isBusy(SQLException e) {
        int code = e.getErrorCode() & 0xff;
        return code == SQLITE_BUSY || code == SQLITE_LOCKED;
    }
}
