package dev.warden.engine;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.warden.config.SecretFile;
import dev.warden.config.WardenConfig;
import dev.warden.lock.FileLocker;
import dev.warden.lock.Posix;
import jakarta.enterprise.inject.Produces;
import jakarta.inject.Singleton;
import java.io.IOException;
import java.util.Optional;
import org.jboss.logging.Logger;

/** The engine machinery as beans, configured from {@code warden.engine.*}. */
public class EngineBeans {

    private static final Logger LOG = Logger.getLogger(EngineBeans.class);

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
    EngineClient engineClient(ObjectMapper json, WardenConfig config, EngineApiKey key) {
        WardenConfig.Engine engine = config.engine();
        return new EngineClient(json, engine.connectTimeout(), engine.readTimeout(), engine.unloadTimeout(), key.value());
    }

    /** The engine's API key: {@code warden.engine.api-key}, else the content of {@code api-key-file}. */
    @Produces
    @Singleton
    EngineApiKey engineApiKey(WardenConfig config) {
        return new EngineApiKey(apiKey(config.engine()));
    }

    private static Optional<String> apiKey(WardenConfig.Engine engine) {
        Optional<String> key = engine.apiKey().map(String::strip).filter(k -> !k.isEmpty());
        if (key.isPresent() || engine.apiKeyFile().isEmpty()) {
            return key;
        }
        try {
            return SecretFile.read(engine.apiKeyFile().get());
        } catch (IOException e) {
            LOG.warnf("warden.engine.api-key-file: %s. warden calls the engine without a key, which a llama-swap with"
                    + " apiKeys refuses: mount the Secret there, or unset the setting.", e.getMessage());
            return Optional.empty();
        }
    }

    @Produces
    @Singleton
    EngineStopper engineStopper(Posix posix, ProcessTable processes, WardenConfig config) {
        return new EngineStopper(new EngineIdentity(processes), processes, new Signaller(posix, processes),
                config.engine().termTimeout(), config.engine().killTimeout());
    }

    @Produces
    @Singleton
    EngineIdentity engineIdentity(ProcessTable processes, EngineApiKey key) {
        return new EngineIdentity(processes, key.isSet());
    }
}
