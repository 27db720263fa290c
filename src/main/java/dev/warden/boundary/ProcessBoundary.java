package dev.warden.boundary;

import com.sun.management.HotSpotDiagnosticMXBean;
import dev.warden.lock.Posix;
import io.quarkus.runtime.ImageMode;
import io.quarkus.scheduler.Scheduled;
import jakarta.inject.Singleton;
import java.lang.management.ManagementFactory;
import org.jboss.logging.Logger;

/**
 * Keeps warden's process to itself in a pod whose other containers may run as its UID: not dumpable,
 * so no process without CAP_SYS_PTRACE reads its environment, memory, open files or mounts (the
 * Secrets only warden's container mounts) through {@code /proc/<pid>/}, or traces it. What it cannot
 * stop: a process of the same UID may still signal warden (warden needs the same UID to signal lilbee
 * and the engine without CAP_KILL), and reads everything the pod's containers share.
 *
 * <p>{@code main} turns dumpable off before Quarkus starts; {@code serve} checks it took and looks
 * again each minute, since a change of credentials or an exec would turn it back on.
 */
@Singleton
public class ProcessBoundary {

    private static final Logger LOG = Logger.getLogger(ProcessBoundary.class);

    private final Posix posix;
    private volatile boolean guarding;

    public ProcessBoundary(Posix posix) {
        this.posix = posix;
    }

    /** At {@code serve}'s start: makes sure warden is not dumpable, and says what is left open. */
    public void guard() {
        guarding = true;
        keepUndumpable(false);
        if (ImageMode.current() == ImageMode.JVM && attachable()) {
            LOG.warn("The JVM's attach mechanism is on: a process of warden's UID that shares its /tmp can run code in warden"
                    + " (jcmd, a Java agent). Start java with -XX:+DisableAttachMechanism, as warden's image does.");
        }
    }

    @Scheduled(every = "60s", delayed = "60s", concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void recheck() {
        if (guarding) {
            keepUndumpable(true);
        }
    }

    /** {@code again}: it was made undumpable before, so finding it dumpable means something turned that back. */
    private void keepUndumpable(boolean again) {
        try {
            if (posix.dumpable()) {
                posix.dumpable(false);
                if (again) {
                    LOG.warn("warden's process was dumpable again (its /proc/<pid>/ open to every process of its UID):"
                            + " made it undumpable");
                }
            }
        } catch (Posix.ErrnoException e) {
            LOG.errorf("Cannot make warden's process undumpable (%s): other processes of its UID can read its environment,"
                    + " memory and mounted Secrets through /proc", e.getMessage());
        }
    }

    private static boolean attachable() {
        HotSpotDiagnosticMXBean hotspot = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
        return hotspot != null && "false".equals(hotspot.getVMOption("DisableAttachMechanism").getValue());
    }
}
