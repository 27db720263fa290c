package dev.warden.simulation;

import dev.warden.lock.Errno;
import dev.warden.lock.FileStat;
import dev.warden.lock.Posix;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * One process's libc in the simulation: the calls the production classes make ({@link dev.warden.lock.FileLocker},
 * {@link dev.warden.gate.pod.GateLock}, {@link dev.warden.gate.pod.LilbeeSwitch}), answered by the simulated {@link Kernel} for
 * that process, its descriptor numbers its own. Nothing here blocks: a wait for a lock is the kernel's waiter
 * ({@link #lockWhenFree}), granted when the simulation runs it.
 */
final class SimPosix implements Posix {

    private static final int S_IFREG = 0100000;
    private static final int S_IFDIR = 0040000;
    private static final int S_IFSOCK = 0140000;

    private final Kernel kernel;
    private final Kernel.Proc proc;

    SimPosix(Kernel kernel, Kernel.Proc proc) {
        this.kernel = kernel;
        this.proc = proc;
    }

    /** A directory and a name in it, resolved as openat(2) would: relative to a descriptor, or an absolute path. */
    private record Place(Kernel.Dir dir, String name) {
    }

    private Place place(int dirFd, String name, String call) throws ErrnoException {
        if (dirFd != AT_FDCWD) {
            if (!(proc.handle(dirFd) instanceof Kernel.Dir dir)) {
                throw new ErrnoException(call, Errno.ENOTDIR, "not a directory");
            }
            return new Place(dir, name);
        }
        int slash = name.lastIndexOf('/');
        String parent = slash <= 0 ? "/" : name.substring(0, slash);
        Kernel.Dir dir = kernel.dir(proc, parent).orElseThrow(() -> new ErrnoException(call + "(" + name + ")",
                Errno.ENOENT, "no such file or directory"));
        return new Place(dir, name.substring(slash + 1));
    }

    @Override
    public int openAt(int dirFd, String name, Open how) throws ErrnoException {
        if (how == Open.DIRECTORY) {
            String path = dirFd == AT_FDCWD ? name : ((Kernel.Dir) proc.handle(dirFd)).path + "/" + name;
            Optional<Kernel.Dir> dir = kernel.dir(proc, path);
            if (dir.isEmpty()) {
                throw new ErrnoException("openat(" + path + ")", Kernel.isParentDir(path) ? Errno.EACCES : Errno.ENOENT,
                        "not a directory of the simulation");
            }
            return proc.install(dir.get());
        }
        Place place = place(dirFd, name, "openat");
        Object entry = place.dir().entries.get(place.name());
        if (entry == null && how != Open.READ) {
            kernel.write(proc, place.dir(), "openat");
        }
        if (entry != null && !(entry instanceof Kernel.Inode)) {
            throw new ErrnoException("openat(" + name + ")", Errno.ENXIO, "no such device or address");
        }
        if (entry != null && how == Open.CREATE_NEW) {
            throw new ErrnoException("openat(" + name + ")", Errno.EEXIST, "file exists");
        }
        Kernel.Inode inode = kernel.openInode(place.dir(), place.name(), how != Open.READ).orElseThrow(() ->
                new ErrnoException("openat(" + name + ")", Errno.ENOENT, "no such file or directory"));
        return proc.take(kernel.newOfd(inode, proc));
    }

    private Kernel.Ofd ofd(int fd) throws ErrnoException {
        if (proc.handle(fd) instanceof Kernel.Ofd ofd) {
            return ofd;
        }
        throw new ErrnoException("fd " + fd, Errno.EINVAL, "not an open file");
    }

    @Override
    public void lockExclusive(int fd, boolean wait) throws ErrnoException {
        if (wait) {
            throw new UnsupportedOperationException("the simulation never blocks: lockWhenFree waits in its kernel");
        }
        if (!kernel.tryExclusive(ofd(fd))) {
            throw new ErrnoException("flock", Errno.EWOULDBLOCK, "resource temporarily unavailable");
        }
    }

    @Override
    public CompletableFuture<Void> lockWhenFree(int fd) {
        CompletableFuture<Void> granted = new CompletableFuture<>();
        try {
            kernel.waitExclusive(ofd(fd), won -> {
                if (won) {
                    granted.complete(null);
                } else {
                    granted.completeExceptionally(new ErrnoException("flock", Errno.EBADF, "its descriptor was closed"));
                }
            });
        } catch (ErrnoException e) {
            granted.completeExceptionally(e);
        }
        return granted;
    }

    @Override
    public void unlock(int fd) throws ErrnoException {
        kernel.unlock(ofd(fd));
    }

    @Override
    public void close(int fd) {
        proc.close(fd);
    }

    @Override
    public FileStat fstat(int fd) throws ErrnoException {
        return switch (proc.handle(fd)) {
            case Kernel.Ofd ofd -> new FileStat(ofd.inode.id(), S_IFREG | 0644, 0, Kernel.UID);
            case Kernel.Dir dir -> new FileStat(new dev.warden.lock.FileId(Kernel.DEVICE, dir.path.hashCode()), S_IFDIR | 0755, 0,
                    Kernel.UID);
            default -> new FileStat(new dev.warden.lock.FileId(Kernel.DEVICE, 1), S_IFSOCK | 0600, 0, Kernel.UID);
        };
    }

    @Override
    public FileStat statAt(int dirFd, String name) throws ErrnoException {
        String path = dirFd == AT_FDCWD ? name : ((Kernel.Dir) proc.handle(dirFd)).path + "/" + name;
        if (kernel.dir(proc, path).isPresent() || Kernel.isParentDir(path)) {
            return new FileStat(new dev.warden.lock.FileId(Kernel.DEVICE, path.hashCode()), S_IFDIR | 0755, 0, Kernel.UID);
        }
        Place place = place(dirFd, name, "fstatat");
        return switch (place.dir().entries.get(place.name())) {
            case Kernel.Inode inode -> new FileStat(inode.id(), S_IFREG | 0644, 0, Kernel.UID);
            case Kernel.Listener listener -> new FileStat(listener.inode.id(), S_IFSOCK | 0600, 0, Kernel.UID);
            case null, default -> throw new ErrnoException("fstatat(" + name + ")", Errno.ENOENT, "no such file or directory");
        };
    }

    @Override
    public byte[] read(int fd, int max) throws ErrnoException {
        Kernel.Ofd ofd = ofd(fd);
        byte[] content = ofd.inode.content;
        int from = Math.min(ofd.position, content.length);
        byte[] read = java.util.Arrays.copyOfRange(content, from, from + Math.min(max, content.length - from));
        ofd.position += read.length;
        return read;
    }

    @Override
    public void write(int fd, byte[] bytes) throws ErrnoException {
        Kernel.Ofd ofd = ofd(fd);
        byte[] content = java.util.Arrays.copyOf(ofd.inode.content, Math.max(ofd.inode.content.length, ofd.position + bytes.length));
        System.arraycopy(bytes, 0, content, ofd.position, bytes.length);
        ofd.inode.content = content;
        ofd.position += bytes.length;
    }

    @Override
    public boolean unlinkAt(int dirFd, String name) throws ErrnoException {
        Place place = place(dirFd, name, "unlinkat");
        if (!place.dir().entries.containsKey(place.name())) {
            return false;
        }
        kernel.write(proc, place.dir(), "unlinkat");
        place.dir().entries.remove(place.name());
        return true;
    }

    @Override
    public void mkdirAt(int dirFd, String name) throws ErrnoException {
        throw new ErrnoException("mkdirat(" + name + ")", Errno.EEXIST, "the simulation's directories all exist");
    }

    @Override
    public void renameAt(int dirFd, String from, String to) throws ErrnoException {
        Place source = place(dirFd, from, "renameat");
        Place target = place(dirFd, to, "renameat");
        if (source.dir() != target.dir()) {
            throw new ErrnoException("renameat", Errno.EXDEV, "not the same directory");
        }
        kernel.write(proc, source.dir(), "renameat");
        if (!kernel.rename(source.dir(), source.name(), target.name())) {
            throw new ErrnoException("renameat(" + from + ")", Errno.ENOENT, "no such file or directory");
        }
    }

    @Override
    public void chmodAt(int dirFd, String name, int mode) {
        // One UID in the whole pod: a mode keeps no process of it out.
    }

    @Override
    public Path pathOf(int fd) throws IOException {
        if (proc.handle(fd) instanceof Kernel.Dir dir) {
            return Path.of(dir.path);
        }
        throw new ErrnoException("readlink", Errno.EINVAL, "not a directory");
    }

    @Override
    public int listenUnix(String path, int backlog) throws ErrnoException {
        Place place = place(AT_FDCWD, path, "bind");
        return proc.install(kernel.listen(proc, place.dir(), place.name(), backlog));
    }

    @Override
    public int accept(int listener) throws ErrnoException {
        if (!(proc.handle(listener) instanceof Kernel.Listener listening)) {
            throw new ErrnoException("accept4", Errno.EINVAL, "not listening");
        }
        Kernel.Endpoint next = kernel.accept(listening);
        return next == null ? -1 : proc.install(next);
    }

    private Kernel.Endpoint endpoint(int fd) throws ErrnoException {
        if (proc.handle(fd) instanceof Kernel.Endpoint endpoint) {
            return endpoint;
        }
        throw new ErrnoException("fd " + fd, Errno.ENOTSOCK, "not a connected socket");
    }

    @Override
    public Peer peer(int socket) throws ErrnoException {
        Kernel.Proc other = endpoint(socket).peerCred;
        return new Peer(other.pid, Kernel.UID, Kernel.UID);
    }

    @Override
    public Received receive(int socket, int max) throws ErrnoException {
        Kernel.Received got = endpoint(socket).receive(proc, max);
        if (got == null) {
            return null;
        }
        int[] fds = got.numbers().stream().mapToInt(Integer::intValue).toArray();
        return new Received(got.bytes(), fds);
    }

    @Override
    public long send(int socket, byte[] bytes, int passFd) throws ErrnoException {
        return endpoint(socket).send(bytes, passFd < 0 ? null : ofd(passFd));
    }

    // Nothing of the gate signals, pages out, or asks the record-lock table.

    @Override
    public boolean kill(long pid, int signal) {
        throw new UnsupportedOperationException("the gate signals nothing");
    }

    @Override
    public int pidfdOpen(long pid) {
        throw new UnsupportedOperationException("the gate signals nothing");
    }

    @Override
    public boolean pidfdSignal(int pidfd, int signal, boolean group) {
        throw new UnsupportedOperationException("the gate signals nothing");
    }

    @Override
    public void dumpable(boolean dumpable) {
        throw new UnsupportedOperationException("set at the process's spawn");
    }

    @Override
    public boolean dumpable() {
        return proc.dumpable;
    }

    @Override
    public void advise(long address, long length, Advice advice) {
        throw new UnsupportedOperationException("no pages in the simulation");
    }

    @Override
    public int umask(int mask) {
        return 022;
    }

    @Override
    public RecordLock conflictingRecordLock(int fd, long start, long length) {
        throw new UnsupportedOperationException("the gate takes no record locks");
    }
}
