package dev.warden.engine;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.warden.config.WardenConfig;
import dev.warden.lock.FileLocker;
import dev.warden.lock.Posix;
import jakarta.enterprise.inject.Produces;
import jakarta.inject.Singleton;

/** The engine machinery as beans, configured from {@code warden.engine.*}. */
public class EngineBeans {

    @Produces
    @Singleton
    ProcessTable processTable() {
        return new ProcessTable();
    }

    @Produces
    @Singleton
    EngineUsers engineUsers(FileLocker locker) {
        return new EngineUsers(locker);
    }

    @Produces
    @Singleton
    EngineRecords engineRecords(ObjectMapper json) {
        return new EngineRecords(json);
    }

    @Produces
    @Singleton
    EngineClient engineClient(ObjectMapper json, WardenConfig config) {
        WardenConfig.Engine engine = config.engine();
        return new EngineClient(json, engine.connectTimeout(), engine.readTimeout(), engine.unloadTimeout(), engine.apiKey());
    }

    @Produces
    @Singleton
    EngineStopper engineStopper(Posix posix, ProcessTable processes, WardenConfig config) {
        return new EngineStopper(new EngineIdentity(processes), processes, new Signaller(posix, processes),
                config.engine().termTimeout(), config.engine().killTimeout());
    }

    @Produces
    @Singleton
    EngineIdentity engineIdentity(ProcessTable processes, WardenConfig config) {
        return new EngineIdentity(processes, config.engine().apiKey().filter(key -> !key.isBlank()).isPresent());
    }
}
