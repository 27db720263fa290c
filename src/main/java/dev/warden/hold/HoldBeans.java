package dev.warden.hold;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.warden.config.WardenConfig;
import dev.warden.lock.LockReach;
import jakarta.enterprise.inject.Produces;
import jakarta.inject.Singleton;
import java.time.InstantSource;

/** The holding machinery's collaborators as beans; tests build them by hand with fakes. */
public class HoldBeans {

    @Produces
    @Singleton
    ScopeOwnerFile scopeOwnerFile(ObjectMapper json) {
        return new ScopeOwnerFile(json);
    }

    @Produces
    @Singleton
    InstantSource clock() {
        return InstantSource.system();
    }

    /** The heartbeat beside each lock that should exclude every pod of the volume, at the configured beat. */
    @Produces
    @Singleton
    LockReach.Factory lockReaches(WardenConfig config) {
        return LockReach.Factory.system(config.lock().heartbeat());
    }
}
