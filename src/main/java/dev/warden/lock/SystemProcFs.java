package dev.warden.lock;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

/** This machine's {@code /proc}, every read capped. */
public final class SystemProcFs implements ProcFs {

    /** Fields of /proc/PID/stat, counted from the one after the ")" that ends comm (field 3). */
    private static final int STATE = 0;
    private static final int PPID = 4 - 3;
    private static final int STARTTIME = 22 - 3;
    /** comm is at most 16 bytes and the rest of stat a few hundred. */
    private static final int STAT_BYTES = 4096;

    private final Path proc;

    public SystemProcFs() {
        this(Path.of("/proc"));
    }

    SystemProcFs(Path proc) {
        this.proc = proc;
    }

    @Override
    public long self() {
        return ProcessHandle.current().pid();
    }

    @Override
    public OptionalLong startTicks(long pid) {
        return statField(pid, STARTTIME);
    }

    @Override
    public OptionalLong parent(long pid) {
        return statField(pid, PPID);
    }

    /** One field of {@code /proc/<pid>/stat} after comm; empty when there is no such process, or a zombie. */
    private OptionalLong statField(long pid, int field) {
        if (pid <= 0) {
            return OptionalLong.empty();
        }
        try (InputStream in = Files.newInputStream(proc.resolve(Long.toString(pid)).resolve("stat"))) {
            String stat = new String(in.readNBytes(STAT_BYTES), StandardCharsets.US_ASCII);
            String[] fields = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
            // A zombie holds no memory, no port and no lock: it is gone.
            if (fields.length <= STARTTIME || fields[STATE].equals("Z") || fields[STATE].equals("X")) {
                return OptionalLong.empty();
            }
            return OptionalLong.of(Long.parseLong(fields[field]));
        } catch (IOException | RuntimeException e) {
            return OptionalLong.empty();
        }
    }

    @Override
    public int[] descriptors(long pid, int max) {
        int[] found = new int[Math.min(max, 256)];
        int count = 0;
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(proc.resolve(Long.toString(pid)).resolve("fd"))) {
            int seen = 0;
            for (Path entry : entries) {
                if (++seen > max) {
                    break;
                }
                try {
                    int fd = Integer.parseInt(entry.getFileName().toString());
                    if (count == found.length) {
                        found = Arrays.copyOf(found, Math.min(max, found.length * 2));
                    }
                    found[count++] = fd;
                } catch (NumberFormatException e) {
                    // not a descriptor
                }
            }
        } catch (IOException | RuntimeException e) {
            // gone, or not this process's to look into (another UID, not dumpable): none
        }
        return Arrays.copyOf(found, count);
    }

    @Override
    public Optional<FileId> fileOf(long pid, int fd) {
        try {
            // Through the magic link: the open file itself, deleted or renamed or not.
            Map<String, Object> id = Files.readAttributes(proc.resolve(Long.toString(pid)).resolve("fd")
                    .resolve(Integer.toString(fd)), "unix:dev,ino");
            return Optional.of(new FileId((Long) id.get("dev"), (Long) id.get("ino")));
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    @Override
    public boolean closed(long pid, int fd) {
        try {
            Files.readAttributes(proc.resolve(Long.toString(pid)).resolve("fd").resolve(Integer.toString(fd)),
                    BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            return false;
        } catch (NoSuchFileException e) {
            // Not the process gone: then it holds nothing, and says so by its start time.
            return startTicks(pid).isPresent();
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    @Override
    public byte[] fdinfo(long pid, int fd, int max) {
        try (InputStream in = Files.newInputStream(proc.resolve(Long.toString(pid)).resolve("fdinfo").resolve(Integer.toString(fd)))) {
            return in.readNBytes(max);
        } catch (IOException | RuntimeException e) {
            return new byte[0];
        }
    }
}
