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
            return Optional.of(new ProcessInfo(pid, Long.parseLong(fields[PPID]), Long.parseLong(fields[PGRP]),
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

    /** warden's own process group, which it never signals. */
    public long ownGroup() {
        return info(ProcessHandle.current().pid()).map(ProcessInfo::pgid).orElse(-1L);
    }
}
