package dev.warden.lock;

import jakarta.enterprise.inject.Produces;
import jakarta.inject.Singleton;

/** The lock primitives as beans: one libc boundary, one locker, one view of the lock table. */
public class LockBeans {

    @Produces
    @Singleton
    Posix posix() {
        return NativePosix.shared();
    }

    @Produces
    @Singleton
    FileLocker fileLocker(Posix posix) {
        return new FileLocker(posix);
    }

    @Produces
    @Singleton
    SyncMark syncMark(Posix posix) {
        return new SyncMark(posix);
    }

    @Produces
    @Singleton
    ProcFs procFs() {
        return new SystemProcFs();
    }

    @Produces
    @Singleton
    ProcLocks procLocks() {
        return new ProcLocks();
    }
}
