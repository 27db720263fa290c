package dev.warden.simulation;

import dev.warden.lock.Errno;
import dev.warden.lock.FileId;
import dev.warden.lock.Posix;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Consumer;

/**
 * The simulation's kernel, under the production classes (through {@link SimPosix} and {@link SimProcFs}) and the
 * models alike: directories (the data dir on the shared volume, and each pod's switch directory, an emptyDir that
 * lilbee's container may mount read-only), names renamed, unlinked and created by anyone with write access; open file
 * descriptions shared by every descriptor that refers to one (inherited, or passed over a Unix socket); flock(2) as
 * Linux has it (a lock belongs to an open file description, lasts until its last descriptor is closed or it is
 * unlocked through any of them; exclusive and shared; waiters woken in order, each to try again when it next runs), one
 * lock table per node (a volume whose locks do not reach across nodes, as in lease mode); Unix stream sockets bound at
 * a name, with a backlog, {@code SO_PEERCRED} (who listened, who connected) and descriptors in flight
 * ({@code SCM_RIGHTS}); and processes with descriptor tables, parents, containers and dumpability (whether a process
 * of the same UID may look into their descriptors or take them: {@code pidfd_getfd}), whose descriptors die with them.
 */
final class Kernel {

    static final long DEVICE = 42;
    static final String DATA = "/data";
    static final String SWITCH_DIR = "/run/warden";
    /** Every process of the pod runs as one UID, as the chart's do. */
    static final int UID = 1001;
    /** A Unix socket's receive buffer, as Linux sizes it roughly: a sender past it is told EAGAIN. */
    private static final int SOCKET_BUFFER = 212_992;

    private final Consumer<Runnable> soon;

    /** @param soon runs an action a moment later: a woken lock waiter, or a reader told it has something to read */
    Kernel(Consumer<Runnable> soon) {
        this.soon = soon;
    }

    /**
     * A file: its inode number, its bytes (the heartbeat's records; lock files stay empty), and per node the open files
     * holding a flock on it and those waiting. Its bytes are one volume's, seen alike from every node.
     */
    final class Inode {
        final long ino;
        byte[] content = new byte[0];
        final Map<Integer, Set<Ofd>> exclusive = new HashMap<>();
        final Map<Integer, Set<Ofd>> shared = new HashMap<>();
        final Map<Integer, Deque<Waiter>> waiters = new HashMap<>();

        Inode(long ino) {
            this.ino = ino;
        }

        FileId id() {
            return new FileId(DEVICE, ino);
        }

        @Override
        public String toString() {
            return "inode " + ino;
        }
    }

    /** An open file description, on the node of the process that opened it. */
    final class Ofd {
        final long id;
        final Inode inode;
        final int node;
        int refs;
        boolean exclusive;
        boolean shared;
        /** Where the next read or write starts. */
        int position;

        Ofd(long id, Inode inode, int node) {
            this.id = id;
            this.inode = inode;
            this.node = node;
        }

        boolean locked() {
            return exclusive || shared;
        }
    }

    record Waiter(Ofd ofd, Consumer<Boolean> granted) {
    }

    /** A directory: names to files (an {@link Inode}) or listening sockets (a {@link Listener}). */
    final class Dir {
        final String path;
        final Map<String, Object> entries = new LinkedHashMap<>();
        /** A writer of this container may not change it (a read-only mount there), or null for none such. */
        final String readOnlyFor;

        Dir(String path, String readOnlyFor) {
            this.path = path;
            this.readOnlyFor = readOnlyFor;
        }
    }

    /** A process: its pid, node, pod and container, parent, descriptors, whether same-UID processes may look in. */
    final class Proc {
        final long pid;
        final long startTicks;
        final int node;
        final String name;
        final String pod;
        final String container;
        final Proc parent;
        final boolean dumpable;
        boolean alive = true;
        boolean stopped;
        /** A neighbour's process (lilbee's container's, or another container's), not warden, a supervisor or a lilbee. */
        boolean neighbour;
        private final TreeMap<Integer, Object> fds = new TreeMap<>();
        final List<Runnable> onDeath = new ArrayList<>();

        Proc(long pid, long startTicks, int node, String name, String pod, String container, Proc parent, boolean dumpable) {
            this.pid = pid;
            this.startTicks = startTicks;
            this.node = node;
            this.name = name;
            this.pod = pod;
            this.container = container;
            this.parent = parent;
            this.dumpable = dumpable;
        }

        /** A new descriptor (the lowest free number) of {@code handle}: an open file, directory, listener or socket. */
        int install(Object handle) {
            int fd = 3;
            while (fds.containsKey(fd)) {
                fd++;
            }
            fds.put(fd, handle);
            return fd;
        }

        /** A new descriptor of {@code ofd}: inherited, or taken from another process. */
        int take(Ofd ofd) {
            ofd.refs++;
            return install(ofd);
        }

        Object handle(int fd) throws Posix.ErrnoException {
            Object handle = fds.get(fd);
            if (handle == null) {
                throw new Posix.ErrnoException("fd " + fd, Errno.EBADF, "bad file descriptor");
            }
            return handle;
        }

        Set<Integer> descriptors() {
            return fds.keySet();
        }

        /** Closes descriptor {@code fd}; what it referred to ends with its last descriptor. */
        void close(int fd) {
            Object handle = fds.remove(fd);
            switch (handle) {
                case Ofd ofd -> unref(ofd);
                case Endpoint endpoint -> endpoint.close();
                case Listener listener -> listener.close();
                case null, default -> {
                }
            }
        }

        /** Closes one descriptor of {@code ofd}. */
        void close(Ofd ofd) {
            fds.entrySet().stream().filter(e -> e.getValue() == ofd).map(Map.Entry::getKey).findFirst().ifPresent(this::close);
        }

        /** The open files whose descriptors it holds that hold a flock: what a process that takes its descriptors wants. */
        List<Ofd> lockedOfds() {
            return fds.values().stream().filter(h -> h instanceof Ofd ofd && ofd.locked()).map(h -> (Ofd) h).distinct().toList();
        }

        /** The files this process holds an exclusive flock on, through any of its descriptors. */
        Set<FileId> exclusiveFlocks() {
            Set<FileId> held = new HashSet<>();
            for (Object handle : fds.values()) {
                if (handle instanceof Ofd ofd && ofd.exclusive) {
                    held.add(ofd.inode.id());
                }
            }
            return held;
        }

        @Override
        public String toString() {
            return name + "[" + pid + "]";
        }
    }

    /** A socket listening at a name: who listened (its peer for every connection), and the connections waiting. */
    final class Listener {
        final Proc owner;
        final Inode inode;
        final Deque<Endpoint> backlog = new ArrayDeque<>();
        final int max;
        boolean closed;

        Listener(Proc owner, int max) {
            this.owner = owner;
            this.inode = new Inode(nextIno++);
            this.max = max;
        }

        void close() {
            if (!closed) {
                closed = true;
                for (Endpoint waiting : backlog) {
                    waiting.close();
                }
                backlog.clear();
            }
        }
    }

    /** Bytes sent in one call, with the descriptors passed with them (kept open in flight). */
    private record Segment(byte[] bytes, List<Ofd> fds) {
    }

    /** One end of a connected stream socket; {@code peerCred} is what {@code SO_PEERCRED} says of the other. */
    final class Endpoint {
        final Proc peerCred;
        Endpoint peer;
        private final Deque<Segment> inbox = new ArrayDeque<>();
        private int queued;
        boolean closed;
        /** Called (a moment later) when something arrives to read, or the peer closes. */
        Runnable onReadable;

        Endpoint(Proc peerCred) {
            this.peerCred = peerCred;
        }

        void close() {
            if (closed) {
                return;
            }
            closed = true;
            for (Segment segment : inbox) {
                segment.fds().forEach(Kernel.this::unref);
            }
            inbox.clear();
            queued = 0;
            if (peer != null) {
                peer.readable();
            }
        }

        private void readable() {
            Runnable wake = onReadable;
            if (wake != null && !closed) {
                soon.accept(wake);
            }
        }

        /**
         * {@code sendmsg(MSG_DONTWAIT)}: the bytes (and the descriptor, kept open in flight) queued for the peer; -1 when
         * its buffer is full.
         */
        long send(byte[] bytes, Ofd pass) throws Posix.ErrnoException {
            if (closed || peer == null || peer.closed) {
                throw new Posix.ErrnoException("sendmsg", Errno.EPIPE, "broken pipe");
            }
            if (peer.queued + bytes.length > SOCKET_BUFFER) {
                return -1;
            }
            List<Ofd> fds = new ArrayList<>();
            if (pass != null) {
                pass.refs++;
                fds.add(pass);
            }
            peer.inbox.add(new Segment(bytes.clone(), fds));
            peer.queued += bytes.length;
            peer.readable();
            return bytes.length;
        }

        /**
         * {@code recvmsg(MSG_DONTWAIT)} by {@code proc}: at most {@code max} bytes, the descriptors that came with them now
         * its own (a read never runs past the bytes another segment's descriptors came with); null when nothing waits, no
         * bytes at the end.
         */
        Received receive(Proc proc, int max) {
            if (inbox.isEmpty()) {
                return peer == null || peer.closed ? new Received(new byte[0], List.of(), List.of()) : null;
            }
            java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
            List<Ofd> fds = new ArrayList<>();
            while (!inbox.isEmpty() && bytes.size() < max) {
                Segment next = inbox.peekFirst();
                if (!next.fds().isEmpty() && bytes.size() > 0) {
                    break;
                }
                int take = Math.min(next.bytes().length, max - bytes.size());
                bytes.write(next.bytes(), 0, take);
                fds.addAll(next.fds());
                inbox.pollFirst();
                if (take < next.bytes().length) {
                    inbox.addFirst(new Segment(java.util.Arrays.copyOfRange(next.bytes(), take, next.bytes().length),
                            List.of()));
                }
            }
            queued -= bytes.size();
            List<Integer> numbers = new ArrayList<>();
            for (Ofd ofd : fds) {
                if (proc.alive) {
                    numbers.add(proc.install(ofd));
                } else {
                    unref(ofd);
                }
            }
            return new Received(bytes.toByteArray(), fds, numbers);
        }
    }

    /** What a receive got: bytes, and the open files passed with them, each now the receiver's descriptor {@code numbers}. */
    record Received(byte[] bytes, List<Ofd> fds, List<Integer> numbers) {
    }

    private final Dir data = new Dir(DATA, null);
    private final Map<String, Dir> switchDirs = new HashMap<>();
    private final Map<Long, Proc> procs = new HashMap<>();
    private long nextIno = 1000;
    private long nextOfd = 1;
    private long nextPid = 100;
    private long ticks;

    Proc spawn(int node, String name, String pod, String container, Proc parent, boolean dumpable) {
        Proc proc = new Proc(nextPid++, ++ticks, node, name, pod, container, parent, dumpable);
        procs.put(proc.pid, proc);
        return proc;
    }

    /** A neighbour's process: as {@link #spawn}, marked so. */
    Proc spawnNeighbour(int node, String name, String pod, Proc parent) {
        Proc proc = spawn(node, name, pod, "lilbee", parent, true);
        proc.neighbour = true;
        return proc;
    }

    /** Whether a neighbour's process holds a lock, through any of its descriptors, on a file at one of {@code names}. */
    boolean aNeighbourLocks(Set<String> names) {
        Set<Inode> files = names.stream().map(this::at).flatMap(Optional::stream).collect(java.util.stream.Collectors.toSet());
        return procs.values().stream().anyMatch(p -> p.alive && p.neighbour
                && p.lockedOfds().stream().anyMatch(ofd -> files.contains(ofd.inode)));
    }

    Optional<Proc> proc(long pid) {
        return Optional.ofNullable(procs.get(pid)).filter(p -> p.alive);
    }

    /** The process dies, however: every descriptor it held is closed, the locks of open files it held last go. */
    void die(Proc proc) {
        if (!proc.alive) {
            return;
        }
        proc.alive = false;
        proc.stopped = false;
        for (int fd : List.copyOf(proc.fds.keySet())) {
            proc.close(fd);
        }
        procs.remove(proc.pid);
        for (Runnable callback : List.copyOf(proc.onDeath)) {
            callback.run();
        }
    }

    /** A pod's switch directory: an emptyDir of its own, read-only in lilbee's container unless {@code writable}. */
    void switchDir(String pod, boolean writableForLilbee) {
        switchDirs.put(pod, new Dir(SWITCH_DIR, writableForLilbee ? null : "lilbee"));
    }

    /** The directory {@code path} names for {@code proc} (each pod mounts its own switch directory), if any. */
    Optional<Dir> dir(Proc proc, String path) {
        return switch (path) {
            case DATA -> Optional.of(data);
            case SWITCH_DIR -> Optional.ofNullable(switchDirs.get(proc.pod));
            default -> Optional.empty();
        };
    }

    /** Whether {@code path} is a directory above the ones mounted ({@code /}, {@code /run}): there, never changed. */
    static boolean isParentDir(String path) {
        return path.equals("/") || path.equals("/run");
    }

    void write(Proc proc, Dir dir, String call) throws Posix.ErrnoException {
        if (proc.container.equals(dir.readOnlyFor)) {
            throw new Posix.ErrnoException(call, Errno.EROFS, "read-only file system");
        }
    }

    // The data dir, as the models change it.

    Optional<Inode> at(String name) {
        return data.entries.get(name) instanceof Inode inode ? Optional.of(inode) : Optional.empty();
    }

    Optional<FileId> idAt(String name) {
        return at(name).map(Inode::id);
    }

    Set<String> names() {
        return Set.copyOf(data.entries.keySet());
    }

    /** open(2) of a name in the data dir by {@code proc}, created when missing if {@code create}: a new descriptor, or none. */
    Optional<Ofd> open(Proc proc, String name, boolean create) {
        Optional<Inode> inode = openInode(data, name, create);
        return inode.map(file -> {
            Ofd ofd = newOfd(file, proc);
            proc.take(ofd);
            return ofd;
        });
    }

    Optional<Inode> openInode(Dir dir, String name, boolean create) {
        Object entry = dir.entries.get(name);
        if (entry instanceof Inode inode) {
            return Optional.of(inode);
        }
        if (entry == null && create) {
            Inode inode = new Inode(nextIno++);
            dir.entries.put(name, inode);
            return Optional.of(inode);
        }
        return Optional.empty();
    }

    Ofd newOfd(Inode inode, Proc proc) {
        return new Ofd(nextOfd++, inode, proc.node);
    }

    /** rename(2) within the data dir: {@code to} is replaced; false when {@code from} does not exist. */
    boolean rename(String from, String to) {
        return rename(data, from, to);
    }

    boolean rename(Dir dir, String from, String to) {
        Object entry = dir.entries.remove(from);
        if (entry == null) {
            return false;
        }
        dir.entries.put(to, entry);
        return true;
    }

    boolean unlink(String name) {
        return data.entries.remove(name) != null;
    }

    // flock(2)

    /** flock(LOCK_EX | LOCK_NB): granted unless another open file on this node holds it (its own: already so). */
    boolean tryExclusive(Ofd ofd) {
        if (ofd.exclusive) {
            return true;
        }
        Set<Ofd> ex = ofd.inode.exclusive.computeIfAbsent(ofd.node, n -> new HashSet<>());
        Set<Ofd> sh = ofd.inode.shared.computeIfAbsent(ofd.node, n -> new HashSet<>());
        if (!ex.isEmpty() || sh.stream().anyMatch(o -> o != ofd)) {
            return false;
        }
        sh.remove(ofd);
        ofd.shared = false;
        ofd.exclusive = true;
        ex.add(ofd);
        return true;
    }

    /**
     * flock(LOCK_EX), waiting in the kernel: {@code granted} is called with true once it is, or with false if the wait
     * ends first (its last descriptor closed).
     */
    void waitExclusive(Ofd ofd, Consumer<Boolean> granted) {
        if (tryExclusive(ofd)) {
            granted.accept(true);
            return;
        }
        ofd.inode.waiters.computeIfAbsent(ofd.node, n -> new ArrayDeque<>()).add(new Waiter(ofd, granted));
    }

    void unref(Ofd ofd) {
        if (--ofd.refs > 0) {
            return;
        }
        Deque<Waiter> waiting = ofd.inode.waiters.getOrDefault(ofd.node, new ArrayDeque<>());
        for (Waiter waiter : List.copyOf(waiting)) {
            if (waiter.ofd() == ofd) {
                waiting.remove(waiter);
                waiter.granted().accept(false);
            }
        }
        unlock(ofd);
    }

    /**
     * Linux wakes the waiters and each takes the lock when it next runs: a process that asks for it meanwhile
     * (LOCK_NB, say the one that just let it go) may take it first.
     */
    private void wake(Inode inode, int node) {
        soon.accept(() -> grant(inode, node));
    }

    private void grant(Inode inode, int node) {
        Deque<Waiter> waiting = inode.waiters.getOrDefault(node, new ArrayDeque<>());
        while (!waiting.isEmpty() && tryExclusive(waiting.peekFirst().ofd())) {
            waiting.pollFirst().granted().accept(true);
        }
    }

    /** flock(LOCK_UN) through any descriptor of {@code ofd}: its lock ends, for every process holding the open file. */
    void unlock(Ofd ofd) {
        if (ofd.locked()) {
            ofd.inode.exclusive.getOrDefault(ofd.node, Set.of()).remove(ofd);
            ofd.inode.shared.getOrDefault(ofd.node, Set.of()).remove(ofd);
            ofd.exclusive = false;
            ofd.shared = false;
            wake(ofd.inode, ofd.node);
        }
    }

    /**
     * {@code pidfd_getfd(pidfd_open(target), fd)} by {@code thief}: a descriptor of {@code target}'s open file, when the
     * kernel's ptrace check lets it (the same UID, as every process of the pod is, and {@code target} dumpable).
     */
    Optional<Ofd> steal(Proc thief, Proc target, Ofd ofd) {
        if (!target.alive || !target.dumpable || !target.fds.containsValue(ofd)) {
            return Optional.empty();
        }
        thief.take(ofd);
        return Optional.of(ofd);
    }

    // Unix sockets

    /** {@code socket}, {@code bind} and {@code listen} at {@code name} in {@code dir}: the name must be free. */
    Listener listen(Proc proc, Dir dir, String name, int backlog) throws Posix.ErrnoException {
        write(proc, dir, "bind");
        if (dir.entries.containsKey(name)) {
            throw new Posix.ErrnoException("bind", Errno.EADDRINUSE, "address in use");
        }
        Listener listener = new Listener(proc, backlog);
        dir.entries.put(name, listener);
        return listener;
    }

    /**
     * {@code connect} of a non-blocking Unix stream socket to whatever listens at {@code name} now: the connection, its
     * server end waiting in the listener's backlog; EAGAIN when that is full, ECONNREFUSED when nobody listens.
     */
    Endpoint connect(Proc proc, Dir dir, String name) throws Posix.ErrnoException {
        Object entry = dir.entries.get(name);
        if (entry == null) {
            throw new Posix.ErrnoException("connect", Errno.ENOENT, "no such file or directory");
        }
        if (!(entry instanceof Listener listener) || listener.closed || !listener.owner.alive) {
            throw new Posix.ErrnoException("connect", Errno.ECONNREFUSED, "connection refused");
        }
        if (listener.backlog.size() >= listener.max) {
            throw new Posix.ErrnoException("connect", Errno.EAGAIN, "resource temporarily unavailable");
        }
        Endpoint client = new Endpoint(listener.owner);
        Endpoint server = new Endpoint(proc);
        client.peer = server;
        server.peer = client;
        listener.backlog.add(server);
        return client;
    }

    /** {@code accept4(SOCK_NONBLOCK)}: the next connection waiting, or null. */
    Endpoint accept(Listener listener) {
        return listener.backlog.pollFirst();
    }
}
