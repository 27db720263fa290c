package dev.warden.engine;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;

/**
 * The processes warden can see in {@code /proc}. In a pod this needs
 * {@code shareProcessNamespace: true} to see the engine's processes at all.
 */
public final class ProcessTable {

    /** Fields of /proc/PID/stat, counted from the one after the ")" that ends comm (field 3). */
    private static final int PPID = 4 - 3;
    private static final int PGRP = 5 - 3;
    private static final int SESSION = 6 - 3;
    private static final int STARTTIME = 22 - 3;
    /**
     * The unit of /proc's start times (USER_HZ): the kernel reports them in ticks of 1/100 s on every
     * architecture it runs containers on, whatever its own timer frequency.
     */
    private static final long TICKS_PER_SECOND = 100;
    /** /proc/stat has a line per CPU before {@code btime}: a bound on the lines read for it. */
    private static final int STAT_LINES = 1 << 16;
    /** TCP_LISTEN in /proc/net/tcp's {@code st} column. */
    private static final String LISTEN = "0A";

    private final Path proc;

    public ProcessTable() {
        this(Path.of("/proc"));
    }

    ProcessTable(Path proc) {
        this.proc = proc;
    }

    public Optional<ProcessInfo> info(long pid) {
        return info(pid, bootTime());
    }

    private Optional<ProcessInfo> info(long pid, OptionalLong bootTime) {
        String[] fields = stat(pid);
        if (fields == null) {
            return Optional.empty();
        }
        try {
            byte[] cmdline = Files.readAllBytes(proc.resolve(Long.toString(pid)).resolve("cmdline"));
            List<String> argv = cmdline.length == 0 ? List.of()
                    : Arrays.asList(new String(cmdline, StandardCharsets.UTF_8).split("\0"));
            long ticks = Long.parseLong(fields[STARTTIME]);
            Optional<Instant> start = bootTime.isEmpty() ? Optional.empty()
                    : Optional.of(Instant.ofEpochSecond(bootTime.getAsLong()).plusMillis(ticks * 1000 / TICKS_PER_SECOND));
            return Optional.of(new ProcessInfo(pid, Long.parseLong(fields[PPID]), Long.parseLong(fields[PGRP]), Long.parseLong(fields[SESSION]),
                    start, ticks, argv));
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /** The real UID {@code pid} runs as ({@code Uid:} in {@code /proc/<pid>/status}); empty when gone. */
    public OptionalInt uid(long pid) {
        if (pid <= 0) {
            return OptionalInt.empty();
        }
        try (var lines = Files.lines(proc.resolve(Long.toString(pid)).resolve("status"), StandardCharsets.UTF_8)) {
            return lines.limit(64).filter(l -> l.startsWith("Uid:")).findFirst()
                    .map(l -> OptionalInt.of(Integer.parseInt(l.substring(4).trim().split("\\s+")[0])))
                    .orElse(OptionalInt.empty());
        } catch (IOException | RuntimeException e) {
            return OptionalInt.empty();
        }
    }

    /** Its start in clock ticks since boot, one read of {@code /proc/<pid>/stat}; empty when gone or a zombie. */
    public OptionalLong startTicks(long pid) {
        String[] fields = stat(pid);
        try {
            return fields == null ? OptionalLong.empty() : OptionalLong.of(Long.parseLong(fields[STARTTIME]));
        } catch (RuntimeException e) {
            return OptionalLong.empty();
        }
    }

    /**
     * When the machine booted, in epoch seconds: {@code btime} in /proc/stat, read each time. lilbee's
     * {@code created_at} is the btime of the moment it wrote the record plus the start ticks; the
     * JDK's {@code startInstant()} keeps the btime of the moment the JVM first asked, so once the wall
     * clock was stepped (an NTP step, a resumed VM) a long-running warden would take every engine
     * started since for a reused pid, and never stop it.
     */
    private OptionalLong bootTime() {
        try (BufferedReader lines = Files.newBufferedReader(proc.resolve("stat"), StandardCharsets.US_ASCII)) {
            for (int i = 0; i < STAT_LINES; i++) {
                String line = lines.readLine();
                if (line == null) {
                    break;
                }
                if (line.startsWith("btime ")) {
                    return OptionalLong.of(Long.parseLong(line.substring("btime ".length()).trim()));
                }
            }
        } catch (IOException | RuntimeException e) {
            // no /proc/stat: start times are unknown, and no record's engine is taken for its pid
        }
        return OptionalLong.empty();
    }

    /** The fields of {@code /proc/<pid>/stat} after comm; null when there is no such process, or a zombie. */
    private String[] stat(long pid) {
        if (pid <= 0) {
            return null;
        }
        try {
            String stat = Files.readString(proc.resolve(Long.toString(pid)).resolve("stat"), StandardCharsets.UTF_8);
            int end = stat.lastIndexOf(')');
            String[] fields = stat.substring(end + 2).trim().split(" ");
            // A zombie holds no memory, no port and no lock: it is gone.
            return fields.length <= STARTTIME || fields[0].equals("Z") || fields[0].equals("X") ? null : fields;
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    public boolean alive(long pid) {
        // whether it runs needs no start time, so no read of /proc/stat
        return info(pid, OptionalLong.empty()).isPresent();
    }

    /** Whether {@code checked} still runs: its pid is alive, not a zombie, and not a later process that reused it. */
    public boolean alive(ProcessInfo checked) {
        OptionalLong ticks = startTicks(checked.pid());
        return ticks.isPresent() && ticks.getAsLong() == checked.startTicks();
    }

    /** Every process visible now. */
    public List<ProcessInfo> all() {
        List<ProcessInfo> all = new ArrayList<>();
        OptionalLong bootTime = bootTime();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(proc, "[0-9]*")) {
            for (Path entry : entries) {
                try {
                    info(Long.parseLong(entry.getFileName().toString()), bootTime).ifPresent(all::add);
                } catch (NumberFormatException e) {
                    // not a process
                }
            }
        } catch (IOException e) {
            return all;
        }
        return all;
    }

    /** The pids of every descendant of {@code pid}, found by walking parent links. */
    public List<Long> descendants(long pid) {
        List<ProcessInfo> all = all();
        List<Long> found = new ArrayList<>();
        List<Long> frontier = new ArrayList<>(List.of(pid));
        while (!frontier.isEmpty()) {
            long parent = frontier.removeLast();
            for (ProcessInfo p : all) {
                if (p.ppid() == parent && !found.contains(p.pid())) {
                    found.add(p.pid());
                    frontier.add(p.pid());
                }
            }
        }
        return found;
    }

    /**
     * Whether {@code pid} is the process listening on loopback {@code port}: a listening TCP socket
     * on that port (/proc/net/tcp, tcp6) that is one of its open descriptors.
     */
    public boolean listensOn(long pid, int port) {
        java.util.Set<String> sockets = new java.util.HashSet<>();
        for (String table : List.of("net/tcp", "net/tcp6")) {
            try (var lines = Files.lines(proc.resolve(table))) {
                lines.skip(1).map(l -> l.trim().split("\\s+")).filter(f -> f.length > 9 && f[3].equals(LISTEN))
                        .filter(f -> f[1].endsWith(":" + String.format("%04X", port)))
                        .forEach(f -> sockets.add("socket:[" + f[9] + "]"));
            } catch (IOException | java.io.UncheckedIOException e) {
                // no such table (no IPv6): nothing listens there
            }
        }
        if (sockets.isEmpty()) {
            return false;
        }
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(proc.resolve(Long.toString(pid)).resolve("fd"))) {
            for (Path fd : fds) {
                try {
                    if (sockets.contains(Files.readSymbolicLink(fd).toString())) {
                        return true;
                    }
                } catch (IOException e) {
                    // closed meanwhile
                }
            }
        } catch (IOException e) {
            return false;
        }
        return false;
    }

    /** warden's own process group, which it never signals. */
    public long ownGroup() {
        return info(ProcessHandle.current().pid()).map(ProcessInfo::pgid).orElse(-1L);
    }
}
