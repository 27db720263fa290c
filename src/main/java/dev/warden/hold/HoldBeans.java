package dev.warden.hold;

import com.fasterxml.jackson.databind.ObjectMapper;
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
}
