package dev.warden.engine;

import dev.warden.lock.CheckedDir;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jboss.logging.Logger;

/**
 * Stops a recorded llama-swap and everything it left behind: SIGTERM to its group, SIGKILL if it
 * lingers, then the survivors (its descendants seen before the signal, and llama-servers on its
 * recorded ports whose parent is no live llama-swap: a SIGKILLed llama-swap orphans them with
 * their memory and ports). Nothing is signalled before its identity is checked.
 */
public final class EngineStopper {

    private static final Logger LOG = Logger.getLogger(EngineStopper.class);

    private final EngineIdentity identity;
    private final ProcessTable processes;
    private final Signaller signaller;
    private final Duration termTimeout;
    private final Duration killTimeout;

    public EngineStopper(EngineIdentity identity, ProcessTable processes, Signaller signaller, Duration termTimeout,
            Duration killTimeout) {
        this.identity = identity;
        this.processes = processes;
        this.signaller = signaller;
        this.termTimeout = termTimeout;
        this.killTimeout = killTimeout;
    }

    /** Stops every record's engine, deletes the records, then the keep-warm markers; returns what it did. */
    public List<String> stopAll(EngineDir dir, List<EngineRecord> records) {
        List<String> done = new ArrayList<>();
        for (EngineRecord record : records) {
            done.add(stop(record));
            if (Thread.currentThread().isInterrupted()) {
                return done;
            }
        }
        for (Path marker : dir.keepWarmMarkers()) {
            delete(marker);
        }
        return done;
    }

    /** Stops one engine and deletes its record; returns a line saying what happened. */
    public String stop(EngineRecord record) {
        String what;
        Map<Long, ProcessInfo> before = new LinkedHashMap<>();
        Identity found = identity.of(record);
        switch (found) {
            case Identity.Ours ours -> {
                for (long pid : processes.descendants(record.pid())) {
                    processes.info(pid).ifPresent(p -> before.put(pid, p));
                }
                // The group only when llama-swap leads it (lilbee starts it in a session of its own): a pgid
                // naming another process's group would signal that leader and everything in it.
                boolean leadsGroup = ours.process().pgid() == record.pid()
                        && (record.pgid().isEmpty() || record.pgid().getAsLong() == record.pid());
                boolean gone = signaller.terminate(ours.process(), leadsGroup, termTimeout, killTimeout).gone();
                what = gone ? "stopped llama-swap pid " + record.pid()
                        : Thread.currentThread().isInterrupted() ? "sent SIGTERM to llama-swap pid " + record.pid() + ", not yet gone"
                        : "stopped llama-swap pid " + record.pid() + " (it survived SIGKILL)";
            }
            case Identity.Gone gone -> what = "llama-swap pid " + record.pid() + " had already exited";
            case Identity.Stranger stranger -> {
                LOG.warnf("Not signalling the engine of %s: %s", record.file(), stranger.reason());
                what = "did not signal: " + stranger.reason();
            }
        }
        if (Thread.currentThread().isInterrupted()) {
            // Shutting down mid-stop: the record stays, so the next reaper finishes the job.
            LOG.infof("Engine %s: %s; interrupted by shutdown, record kept", record.file().getFileName(), what);
            return what + "; interrupted by shutdown, record kept";
        }
        // A record whose pid is a stranger vouches for no process at all: its ports are not swept.
        int survivors = found instanceof Identity.Stranger ? 0 : reapSurvivors(record, before);
        delete(record.file());
        String line = what + (survivors > 0 ? "; reaped " + survivors + " leftover process(es)" : "");
        LOG.infof("Engine %s: %s", record.file().getFileName(), line);
        return line;
    }

    private int reapSurvivors(EngineRecord record, Map<Long, ProcessInfo> before) {
        Map<Long, ProcessInfo> survivors = new LinkedHashMap<>();
        before.forEach((pid, seen) -> processes.info(pid)
                .filter(seen::sameInstance)
                .ifPresent(now -> survivors.put(pid, now)));
        if (!record.memberPorts().isEmpty()) {
            for (ProcessInfo p : processes.all()) {
                if (identity.startedBy(record, p) && !parentIsLiveLlamaSwap(p)) {
                    survivors.putIfAbsent(p.pid(), p);
                }
            }
        }
        for (ProcessInfo survivor : survivors.values()) {
            LOG.infof("Reaping %s pid %d left behind by %s", survivor.name(), survivor.pid(), record.file().getFileName());
            signaller.terminate(survivor, false, termTimeout, killTimeout);
        }
        return survivors.size();
    }

    private boolean parentIsLiveLlamaSwap(ProcessInfo process) {
        Optional<ProcessInfo> parent = processes.info(process.ppid());
        return parent.isPresent() && parent.get().isLlamaSwap();
    }

    private static void delete(Path file) {
        try (CheckedDir dir = CheckedDir.open(file.getParent())) {
            dir.delete(file.getFileName().toString());
        } catch (IOException e) {
            LOG.warnf("Cannot delete %s: %s", file, e);
        }
    }
}
