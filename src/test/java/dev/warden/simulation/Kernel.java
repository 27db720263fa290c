package dev.warden.simulation;

import dev.warden.lock.FileId;
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
import java.util.function.Consumer;

/**
 * The simulation's kernel: the data dir on the shared volume (names and inodes, renamed, unlinked and created by
 * anyone), open file descriptions (shared by every descriptor that refers to one: inherited, or passed over a Unix
 * socket), flock(2) as Linux has it (a lock belongs to an open file description and lasts until its last descriptor is
 * closed; exclusive and shared; waiters woken in order, each to try again when it next runs), one lock table per node (a volume whose locks do not reach
 * across nodes, as in lease mode), and processes whose descriptors die with them.
 */
final class Kernel {

    static final long DEVICE = 42;

    private final Consumer<Runnable> soon;

    /** @param soon runs an action a moment later, when a woken waiter next runs */
    Kernel(Consumer<Runnable> soon) {
        this.soon = soon;
    }

    /** A file: its inode number, and per node the open files holding a flock on it and those waiting. */
    final class Inode {
        final long ino;
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

    /** A process: its pid, node, the descriptors it holds (each a reference to an open file), alive or stopped. */
    final class Proc {
        final long pid;
        final long startTicks;
        final int node;
        final String name;
        boolean alive = true;
        boolean stopped;
        final List<Ofd> fds = new ArrayList<>();
        final List<Runnable> onDeath = new ArrayList<>();

        Proc(long pid, long startTicks, int node, String name) {
            this.pid = pid;
            this.startTicks = startTicks;
            this.node = node;
            this.name = name;
        }

        /** A new descriptor of {@code ofd}: inherited, or received over a socket. */
        void take(Ofd ofd) {
            ofd.refs++;
            fds.add(ofd);
        }

        /** Closes one descriptor of {@code ofd}. */
        void close(Ofd ofd) {
            if (fds.remove(ofd)) {
                unref(ofd);
            }
        }

        /** The files this process holds an exclusive flock on, through any of its descriptors. */
        Set<FileId> exclusiveFlocks() {
            Set<FileId> held = new HashSet<>();
            for (Ofd ofd : fds) {
                if (ofd.exclusive) {
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

    private final Map<String, Inode> names = new LinkedHashMap<>();
    private final Map<Long, Proc> procs = new HashMap<>();
    private long nextIno = 1000;
    private long nextOfd = 1;
    private long nextPid = 100;
    private long ticks;

    Proc spawn(int node, String name) {
        Proc proc = new Proc(nextPid++, ++ticks, node, name);
        procs.put(proc.pid, proc);
        return proc;
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
        for (Ofd ofd : List.copyOf(proc.fds)) {
            proc.close(ofd);
        }
        procs.remove(proc.pid);
        for (Runnable callback : List.copyOf(proc.onDeath)) {
            callback.run();
        }
    }

    Optional<Inode> at(String name) {
        return Optional.ofNullable(names.get(name));
    }

    Optional<FileId> idAt(String name) {
        return at(name).map(Inode::id);
    }

    Set<String> names() {
        return Set.copyOf(names.keySet());
    }

    /** open(2) of a name in the data dir by {@code proc}, created when missing if {@code create}: a new descriptor, or none. */
    Optional<Ofd> open(Proc proc, String name, boolean create) {
        Inode inode = names.get(name);
        if (inode == null) {
            if (!create) {
                return Optional.empty();
            }
            inode = new Inode(nextIno++);
            names.put(name, inode);
        }
        Ofd ofd = new Ofd(nextOfd++, inode, proc.node);
        proc.take(ofd);
        return Optional.of(ofd);
    }

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

    /** flock(LOCK_SH | LOCK_NB): granted unless another open file on this node holds it exclusively. */
    boolean tryShared(Ofd ofd) {
        if (ofd.locked()) {
            return true;
        }
        if (!ofd.inode.exclusive.computeIfAbsent(ofd.node, n -> new HashSet<>()).isEmpty()) {
            return false;
        }
        ofd.shared = true;
        ofd.inode.shared.computeIfAbsent(ofd.node, n -> new HashSet<>()).add(ofd);
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

    private void unref(Ofd ofd) {
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

    /**
     * A descriptor in flight over a Unix socket (SCM_RIGHTS): the kernel keeps the open file for the message until it is
     * received ({@link #receive}) or dropped ({@link #drop}, its receiver gone).
     */
    void send(Ofd ofd) {
        ofd.refs++;
    }

    /** The descriptor in flight arrives: {@code proc}'s own from now on. */
    void receive(Proc proc, Ofd ofd) {
        if (proc.alive) {
            proc.fds.add(ofd);
        } else {
            unref(ofd);
        }
    }

    void drop(Ofd ofd) {
        unref(ofd);
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

    /** rename(2) within the data dir: {@code to} is replaced; false when {@code from} does not exist. */
    boolean rename(String from, String to) {
        Inode inode = names.remove(from);
        if (inode == null) {
            return false;
        }
        names.put(to, inode);
        return true;
    }

    boolean unlink(String name) {
        return names.remove(name) != null;
    }
}
