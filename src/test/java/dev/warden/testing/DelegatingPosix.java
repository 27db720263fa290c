package dev.warden.testing;

import dev.warden.lock.FileStat;
import dev.warden.lock.Posix;

/** The real libc, for a test to override the one call whose failure it injects. */
public class DelegatingPosix implements Posix {
    private final Posix real;

    public DelegatingPosix(Posix real) {
        this.real = real;
    }

    @Override
    public int openAt(int dirFd, String name, Open how) throws ErrnoException {
        return real.openAt(dirFd, name, how);
    }

    @Override
    public void lockExclusive(int fd, boolean wait) throws ErrnoException {
        real.lockExclusive(fd, wait);
    }

    @Override
    public void unlock(int fd) throws ErrnoException {
        real.unlock(fd);
    }

    @Override
    public void close(int fd) {
        real.close(fd);
    }

    @Override
    public FileStat fstat(int fd) throws ErrnoException {
        return real.fstat(fd);
    }

    @Override
    public FileStat statAt(int dirFd, String name) throws ErrnoException {
        return real.statAt(dirFd, name);
    }

    @Override
    public byte[] read(int fd, int max) throws ErrnoException {
        return real.read(fd, max);
    }

    @Override
    public void write(int fd, byte[] bytes) throws ErrnoException {
        real.write(fd, bytes);
    }

    @Override
    public boolean unlinkAt(int dirFd, String name) throws ErrnoException {
        return real.unlinkAt(dirFd, name);
    }

    @Override
    public void mkdirAt(int dirFd, String name) throws ErrnoException {
        real.mkdirAt(dirFd, name);
    }

    @Override
    public void renameAt(int dirFd, String from, String to) throws ErrnoException {
        real.renameAt(dirFd, from, to);
    }

    @Override
    public void chmodAt(int dirFd, String name, int mode) throws ErrnoException {
        real.chmodAt(dirFd, name, mode);
    }

    @Override
    public boolean kill(long pid, int signal) throws ErrnoException {
        return real.kill(pid, signal);
    }

    @Override
    public int pidfdOpen(long pid) throws ErrnoException {
        return real.pidfdOpen(pid);
    }

    @Override
    public boolean pidfdSignal(int pidfd, int signal, boolean group) throws ErrnoException {
        return real.pidfdSignal(pidfd, signal, group);
    }

    @Override
    public int umask(int mask) {
        return real.umask(mask);
    }

    @Override
    public int listenUnix(String path, int backlog) throws ErrnoException {
        return real.listenUnix(path, backlog);
    }

    @Override
    public int accept(int listener) throws ErrnoException {
        return real.accept(listener);
    }

    @Override
    public Peer peer(int socket) throws ErrnoException {
        return real.peer(socket);
    }

    @Override
    public Received receive(int socket, int max) throws ErrnoException {
        return real.receive(socket, max);
    }

    @Override
    public long send(int socket, byte[] bytes, int passFd) throws ErrnoException {
        return real.send(socket, bytes, passFd);
    }

    @Override
    public RecordLock conflictingRecordLock(int fd, long start, long length) throws ErrnoException {
        return real.conflictingRecordLock(fd, start, length);
    }

    @Override
    public void dumpable(boolean dumpable) throws ErrnoException {
        real.dumpable(dumpable);
    }

    @Override
    public boolean dumpable() throws ErrnoException {
        return real.dumpable();
    }

    @Override
    public void advise(long address, long length, Advice advice) throws ErrnoException {
        real.advise(address, length, advice);
    }
}
