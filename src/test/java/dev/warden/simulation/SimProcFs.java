package dev.warden.simulation;

import dev.warden.lock.FileId;
import dev.warden.lock.Posix;
import dev.warden.lock.ProcFs;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * {@code /proc} as one process of the simulation sees it: the kernel's processes, their parents and start times, and,
 * for a process it may look into (itself, or one that is dumpable: every process of the pod runs as one UID), its
 * descriptors and the locks taken through each, in fdinfo's own format. warden's proof of lilbee and its check of its
 * own gate lock read exactly this.
 */
final class SimProcFs implements ProcFs {

    private final Kernel kernel;
    private final Kernel.Proc proc;
    /** Whether this warden's look at its own gate lock sees it held whatever became of it (a mutation). */
    private final boolean blindToItsOwnLocks;

    SimProcFs(Kernel kernel, Kernel.Proc proc, boolean blindToItsOwnLocks) {
        this.kernel = kernel;
        this.proc = proc;
        this.blindToItsOwnLocks = blindToItsOwnLocks;
    }

    @Override
    public long self() {
        return proc.pid;
    }

    @Override
    public OptionalLong startTicks(long pid) {
        return kernel.proc(pid).map(p -> OptionalLong.of(p.startTicks)).orElse(OptionalLong.empty());
    }

    @Override
    public OptionalLong parent(long pid) {
        return kernel.proc(pid).map(p -> OptionalLong.of(p.parent == null ? 0 : p.parent.pid)).orElse(OptionalLong.empty());
    }

    private Optional<Kernel.Proc> lookInto(long pid) {
        return kernel.proc(pid).filter(target -> target == proc || target.dumpable);
    }

    @Override
    public int[] descriptors(long pid, int max) {
        return lookInto(pid).map(target -> target.descriptors().stream().limit(max).mapToInt(Integer::intValue).toArray())
                .orElse(new int[0]);
    }

    private Optional<Kernel.Ofd> ofd(long pid, int fd) {
        return lookInto(pid).flatMap(target -> {
            try {
                return target.handle(fd) instanceof Kernel.Ofd ofd ? Optional.of(ofd) : Optional.empty();
            } catch (Posix.ErrnoException e) {
                return Optional.empty();
            }
        });
    }

    @Override
    public Optional<FileId> fileOf(long pid, int fd) {
        return ofd(pid, fd).map(ofd -> ofd.inode.id());
    }

    @Override
    public boolean closed(long pid, int fd) {
        return lookInto(pid).map(target -> {
            try {
                target.handle(fd);
                return false;
            } catch (Posix.ErrnoException e) {
                return true;
            }
        }).orElse(false);
    }

    @Override
    public byte[] fdinfo(long pid, int fd, int max) {
        return ofd(pid, fd).map(ofd -> {
            boolean locked = ofd.exclusive || blindToItsOwnLocks && pid == proc.pid;
            String info = "pos:\t0\nflags:\t02\nmnt_id:\t1\nino:\t" + ofd.inode.ino + "\n" + (locked
                    ? "lock:\t1: FLOCK  ADVISORY  WRITE " + pid + " 00:" + Long.toHexString(Kernel.DEVICE) + ":" + ofd.inode.ino
                            + " 0 EOF\n" : "");
            byte[] bytes = info.getBytes(StandardCharsets.US_ASCII);
            return bytes.length <= max ? bytes : java.util.Arrays.copyOf(bytes, max);
        }).orElse(new byte[0]);
    }
}
