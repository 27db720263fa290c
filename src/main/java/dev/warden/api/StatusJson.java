package dev.warden.api;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.warden.config.LilbeePaths;
import dev.warden.config.Mode;
import dev.warden.engine.EngineLook;
import dev.warden.gate.GateSnapshot;
import dev.warden.gate.GateState;
import dev.warden.gate.ServerLockState;
import dev.warden.hold.LockLook;
import dev.warden.library.LibraryLook;
import dev.warden.reaper.PassOutcome;
import dev.warden.reaper.ReaperService;
import dev.warden.reaper.ReaperStatus;
import jakarta.inject.Singleton;
import java.util.List;
import java.util.Optional;

/** The JSON that {@code warden status --json} prints and {@code GET /api/v1/status} answers. */
@Singleton
public class StatusJson {

    private final ObjectMapper mapper;

    public StatusJson(ObjectMapper mapper) {
        this.mapper = mapper;
    }

    /**
     * The reaper's in-memory state and the election's are only known to the serving warden; a one-shot
     * look leaves them out.
     */
    public ObjectNode document(LilbeePaths lilbee, Mode mode, List<LockLook> locks, LibraryLook library,
            List<EngineLook> engines, Optional<ReaperService> reaper, Optional<GateSnapshot> gate) {
        ObjectNode root = mapper.createObjectNode();
        root.put("mode", mode.label());
        root.put("data_root", lilbee.dataRoot().toString());
        root.put("data_root_from", lilbee.rootOrigin());
        root.put("data_dir", lilbee.dataDir().toString());
        root.put("lancedb_dir", lilbee.lancedbDir().toString());
        lilbee.scopeDir().ifPresentOrElse(s -> root.put("scope_dir", s.toString()), () -> root.putNull("scope_dir"));
        ArrayNode lockArray = root.putArray("locks");
        for (LockLook look : locks) {
            ObjectNode lock = lockArray.addObject();
            lock.put("name", look.kind().label());
            lock.put("path", look.path().toString());
            lock.put("state", look.state());
            look.holderPid().ifPresent(pid -> lock.put("holder_pid", pid));
            look.error().ifPresent(error -> lock.put("error", error));
            look.owner().ifPresent(owner -> {
                ObjectNode node = lock.putObject("owner");
                owner.dataDir().ifPresentOrElse(d -> node.put("data_dir", d), () -> node.putNull("data_dir"));
                owner.pid().ifPresent(pid -> node.put("pid", pid));
            });
        }
        gate.ifPresent(g -> root.set("gate", gate(g)));
        ObjectNode libraryNode = root.putObject("library");
        libraryNode.put("sync_running", library.syncRunning());
        libraryNode.put("reset_running", library.resetRunning());
        libraryNode.put("write_lock", library.writeLock());
        library.error().ifPresent(e -> libraryNode.put("error", e));
        ArrayNode engineArray = root.putArray("engines");
        engines.forEach(look -> engineArray.add(engine(look)));
        reaper.ifPresent(r -> {
            ObjectNode node = reaper(r.status());
            ArrayNode dirs = node.putArray("dirs");
            for (ReaperService.Watched watched : r.watched()) {
                dirs.add(reaper(watched.status()).put("role", watched.role()).put("dir", watched.dir().root().toString()));
            }
            root.set("reaper", node);
        });
        return root;
    }

    /** {"error": message}, the shape of every error warden's API answers. */
    public ObjectNode error(String message) {
        return mapper.createObjectNode().put("error", message);
    }

    private ObjectNode gate(GateSnapshot snapshot) {
        ObjectNode gate = mapper.createObjectNode();
        GateState state = snapshot.gate();
        gate.put("state", state.label());
        state.changedAt().ifPresent(t -> gate.put("since", t.toString()));
        state.holderPid().ifPresent(pid -> gate.put("holder_pid", pid));
        state.detail().ifPresent(d -> gate.put("detail", d));
        gate.put("started", snapshot.started());
        gate.put("serving", snapshot.serving());
        snapshot.warm().ifPresentOrElse(pid -> gate.put("warm_pid", pid), () -> gate.putNull("warm_pid"));
        ServerLockState lock = snapshot.server();
        ObjectNode server = gate.putObject("server_lock");
        server.put("state", lock.label());
        lock.holderPid().ifPresent(pid -> server.put("holder_pid", pid));
        lock.error().ifPresent(e -> server.put("error", e));
        if (lock instanceof ServerLockState.InPod inPod) {
            server.put("file_replaced", inPod.replacedFile());
        }
        snapshot.lease().ifPresent(view -> {
            ObjectNode lease = gate.putObject("lease");
            lease.put("name", view.name()).put("identity", view.identity()).put("leading", view.leading());
            view.holder().ifPresentOrElse(h -> lease.put("holder", h), () -> lease.putNull("holder"));
            view.renewed().ifPresent(t -> lease.put("renewed", t.toString()));
        });
        snapshot.note().ifPresent(n -> gate.put("note", n));
        return gate;
    }

    private ObjectNode engine(EngineLook look) {
        ObjectNode engine = mapper.createObjectNode();
        engine.put("role", look.role());
        engine.put("dir", look.dir().toString());
        engine.put("exists", look.exists());
        look.liveUsers().forEach(engine.putArray("live_users")::add);
        look.keepWarmMarkers().forEach(engine.putArray("keep_warm")::add);
        engine.put("reaper_lock", look.reaperLock());
        ArrayNode records = engine.putArray("records");
        for (EngineLook.RecordLook r : look.records()) {
            ObjectNode record = records.addObject();
            record.put("file", r.file());
            record.put("group", r.group());
            record.put("pid", r.pid());
            r.pgid().ifPresent(pgid -> record.put("pgid", pgid));
            r.proxyPort().ifPresent(port -> record.put("proxy_port", port));
            record.put("ours", r.ours());
            record.put("answers", r.answers());
        }
        ArrayNode unreadable = engine.putArray("unreadable_records");
        for (var bad : look.unreadable()) {
            unreadable.addObject().put("file", bad.file().getFileName().toString()).put("reason", bad.reason());
        }
        return engine;
    }

    private ObjectNode reaper(ReaperStatus status) {
        ObjectNode reaper = mapper.createObjectNode();
        reaper.put("watching", status.watching());
        reaper.put("detail", status.detail());
        status.idleSince().ifPresent(t -> reaper.put("idle_since", t.toString()));
        status.lastPass().ifPresent(p -> reaper.set("last_pass", outcome(p)));
        status.lastAction().ifPresent(p -> reaper.set("last_action", outcome(p)));
        status.lastActionAt().ifPresent(t -> reaper.put("last_action_at", t.toString()));
        return reaper;
    }

    private ObjectNode outcome(PassOutcome outcome) {
        ObjectNode node = mapper.createObjectNode();
        node.put("action", outcome.action().name().toLowerCase().replace('_', '-'));
        node.put("detail", outcome.detail());
        return node;
    }
}
