package dev.warden.engine;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * The processes warden can see in {@code /proc}. In a pod this needs
 * {@code shareProcessNamespace: true} to see the engine's processes at all.
 */
public final class ProcessTable {

    /** Fields of /proc/PID/stat, counted from the one after the ")" that ends comm (field 3). */
    private static final int PPID = 4 - 3;
    private static final int PGRP = 5 - 3;
    private static final int SESSION = 6 - 3;
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
        if (pid <= 0) {
            return Optional.empty();
        }
        try {
            String stat = Files.readString(proc.resolve(Long.toString(pid)).resolve("stat"), StandardCharsets.UTF_8);
            int end = stat.lastIndexOf(')');
            String[] fields = stat.substring(end + 2).trim().split(" ");
            if (fields[0].equals("Z") || fields[0].equals("X")) {
                return Optional.empty(); // a zombie holds no memory and no port: it is gone
            }
            byte[] cmdline = Files.readAllBytes(proc.resolve(Long.toString(pid)).resolve("cmdline"));
            List<String> argv = cmdline.length == 0 ? List.of()
                    : Arrays.asList(new String(cmdline, StandardCharsets.UTF_8).split("\0"));
            return Optional.of(new ProcessInfo(pid, Long.parseLong(fields[PPID]), Long.parseLong(fields[PGRP]), Long.parseLong(fields[SESSION]),
                    ProcessHandle.of(pid).flatMap(h -> h.info().startInstant()), argv));
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    public boolean alive(long pid) {
        return info(pid).isPresent();
    }

    /** Every process visible now. */
    public List<ProcessInfo> all() {
        List<ProcessInfo> all = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(proc, "[0-9]*")) {
            for (Path entry : entries) {
                try {
                    info(Long.parseLong(entry.getFileName().toString())).ifPresent(all::add);
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
