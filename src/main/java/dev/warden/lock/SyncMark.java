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
     * here would drop the record locks of a mark this process already holds on it.
     */
    private void checkRegularOrAbsent(Path file) throws Unlockable {
        try (CheckedDir dir = CheckedDir.open(posix, file.toAbsolutePath().getParent())) {
            Optional<FileStat> stat = dir.stat(file.getFileName().toString());
            if (stat.isPresent() && !stat.get().isRegularFile()) {
                throw new Unlockable(file + " is " + stat.get().type() + ", not a database. Remove it; lilbee creates it"
                        + " again.", null);
            }
        } catch (IOException e) {
            throw new Unlockable(file + " cannot be opened (" + reason(e) + ")", e);
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

    /** The file cannot be locked at all: not a database, a filesystem without POSIX locks, no permission. */
    public static final class Unlockable extends Exception {
        public Unlockable(String message, Throwable cause) {
            super(message, cause);
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
     * Whether {@code dir}'s filesystem can hold a SQLite lock: a fresh {@code sync.probe.<hex>}
     * database is locked exclusively within {@link #PROBE_TIMEOUT}, then deleted (with any journal),
     * so no probe is ever left behind.
     *
     * @return empty when it can; otherwise what went wrong
     */
    public Optional<String> probe(Path dir) {
        Path probe = dir.resolve("sync.probe." + UUID.randomUUID().toString().replace("-", ""));
        try {
            Connection connection = open(probe, PROBE_TIMEOUT, "the probe " + probe + " is held");
            try (Statement statement = connection.createStatement()) {
                statement.execute("BEGIN EXCLUSIVE TRANSACTION");
                return Optional.empty();
            } catch (SQLException e) {
                return Optional.of(e.getMessage());
            } finally {
                new Held(connection).close();
            }
        } catch (Busy | Unlockable e) {
            return Optional.of(e.getMessage());
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
        throw new Unlockable(file + " cannot be locked (" + e.getMessage() + ")", e);
    }

    private static boolean isBusy(SQLException e) {
        int code = e.getErrorCode() & 0xff;
        return code == SQLITE_BUSY || code == SQLITE_LOCKED;
    }
}
