package dev.warden.reaper;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.engine.EngineDir;
import dev.warden.engine.EngineUsers;
import dev.warden.engine.ProcessInfo;
import dev.warden.engine.ProcessTable;
import dev.warden.lock.FileLocker;
import dev.warden.lock.NativePosix;
import dev.warden.testing.FakeEngine;
import dev.warden.testing.MutableClock;
import dev.warden.testing.Peer;
import dev.warden.testing.SystemReaper;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The last-user-out rule, pass by pass, against real processes: lock peers and fake engines. */
class ReaperTest {

    private static final Duration IDLE_TTL = Duration.ofMinutes(5);
    private static final Duration TERM = Duration.ofSeconds(5);

    @TempDir
    Path root;

    private EngineDir dir;
    private final MutableClock clock = new MutableClock();
    private final NativePosix posix = new NativePosix();
    private final FileLocker locker = new FileLocker(posix);
    private final ProcessTable processes = new ProcessTable();
    private final List<AutoCloseable> started = new ArrayList<>();
    private final List<Integer> serverPorts = new ArrayList<>();

    @BeforeEach
    void engineDir() throws IOException {
        dir = new EngineDir(root.resolve("engine"));
        Files.createDirectories(dir.usersDir());
    }

    @AfterEach
    void cleanUp() throws Exception {
        for (AutoCloseable process : started) {
            process.close();
        }
        // llama-servers orphaned by a test that failed half-way
        for (ProcessInfo p : processes.all()) {
            if (p.isLlamaServer() && p.port().isPresent() && serverPorts.contains(p.port().getAsInt())) {
                ProcessHandle.of(p.pid()).ifPresent(ProcessHandle::destroyForcibly);
            }
        }
    }

    private Reaper reaper(EngineUsers users, Duration term, Optional<URI> external) {
        return SystemReaper.of(dir, users, SystemReaper.client(), term, clock, IDLE_TTL, external);
    }

    private Reaper reaper() {
        return reaper(new EngineUsers(locker), TERM, Optional.empty());
    }

    private <T extends AutoCloseable> T track(T process) {
        started.add(process);
        return process;
    }

    /** A fake llama-swap answering on a port of its own, recorded in the engine dir as lilbee records it. */
    private FakeEngine recordedEngine(String... knobs) throws IOException {
        int proxy = port();
        List<String> args = new ArrayList<>(List.of("--port", Integer.toString(proxy)));
        args.addAll(List.of(knobs));
        FakeEngine engine = engine(args.toArray(String[]::new));
        engine.writeRecord(dir.root(), "chat", proxy, List.of());
        return engine;
    }

    /** The one record in the engine dir. */
    private Path recordFile() {
        List<Path> records = dir.recordFiles();
        assertEquals(1, records.size(), records.toString());
        return records.getFirst();
    }

    private FakeEngine engine(String... args) throws IOException {
        return track(FakeEngine.startLlamaSwap(args));
    }

    private Peer user(String id) throws IOException {
        return track(Peer.flockHolder(dir.userLock(id)));
    }

    private Path keepWarm() throws IOException {
        return Files.writeString(dir.usersDir().resolve("0123456789abcdef.keep-warm"), "");
    }

    private int port() throws IOException {
        int port = FakeEngine.freePort();
        serverPorts.add(port);
        return port;
    }

    @Test
    void whileAUserLivesNothingIsStopped() throws Exception {
        FakeEngine engine = recordedEngine();
        Path record = recordFile();
        user("lilbee-1");
        assertEquals(PassOutcome.Action.USERS_LIVE, reaper().pass().action());
        assertTrue(engine.alive());
        assertTrue(Files.exists(record));
    }

    @Test
    void whenTheLastUserIsKilledTheEngineGetsSigtermAndItsRecordAndMarkersGo() throws Exception {
        FakeEngine engine = recordedEngine();
        Path record = recordFile();
        Peer first = user("lilbee-1");
        Peer second = user("lilbee-2");
        Reaper reaper = reaper();
        first.kill();
        assertEquals(PassOutcome.Action.USERS_LIVE, reaper.pass().action(), "one user is left");
        assertTrue(engine.alive());
        second.kill();
        PassOutcome outcome = reaper.pass();
        assertEquals(PassOutcome.Action.STOPPED, outcome.action(), outcome.detail());
        assertTrue(outcome.detail().startsWith("every user is gone"), outcome.detail());
        assertEquals(143, engine.exitCode(Duration.ofSeconds(10)), "SIGTERM, not SIGKILL");
        assertFalse(Files.exists(record));
        assertFalse(Files.exists(dir.userLock("lilbee-1")), "dead users' locks are removed");
        assertEquals(PassOutcome.Action.NOTHING_TO_DO, reaper.pass().action());
    }

    @Test
    void aUserWhoJoinsWhileTheBuildLockIsTakenKeepsTheEngine() throws Exception {
        FakeEngine engine = recordedEngine();
        // The first look finds no user; one joins before the look under the build lock.
        EngineUsers joiningDuringThePass = new EngineUsers(locker) {
            private boolean first = true;

            @Override
            public boolean anyLive(EngineDir engineDir) {
                if (first) {
                    first = false;
                    boolean live = super.anyLive(engineDir);
                    try {
                        user("late");
                    } catch (IOException e) {
                        throw new IllegalStateException(e);
                    }
                    return live;
                }
                return super.anyLive(engineDir);
            }
        };
        PassOutcome outcome = reaper(joiningDuringThePass, TERM, Optional.empty()).pass();
        assertEquals(PassOutcome.Action.USERS_LIVE, outcome.action());
        assertEquals("a user joined", outcome.detail());
        assertTrue(engine.alive());
    }

    @Test
    void aBuildLockHeldElsewhereMakesThePassWaitForTheNextTick() throws Exception {
        FakeEngine engine = recordedEngine();
        Path record = recordFile();
        Reaper reaper = reaper();
        try (Peer build = Peer.flockHolder(dir.buildLock())) {
            assertEquals(PassOutcome.Action.BUILD_LOCK_HELD, reaper.pass().action());
            assertTrue(engine.alive());
            assertTrue(Files.exists(record));
        }
        assertEquals(PassOutcome.Action.STOPPED, reaper.pass().action());
        assertEquals(143, engine.exitCode(Duration.ofSeconds(10)));
    }

    @Test
    void aKeptWarmEngineIsUnloadedOnceAfterTheIdleTimeAndNotStopped() throws Exception {
        FakeEngine engine = recordedEngine();
        Path record = recordFile();
        Path marker = keepWarm();
        Reaper reaper = reaper();
        assertEquals(PassOutcome.Action.IDLING, reaper.pass().action());
        clock.advance(IDLE_TTL.minusSeconds(1));
        assertEquals(PassOutcome.Action.IDLING, reaper.pass().action());
        clock.advance(Duration.ofSeconds(1));
        assertEquals(PassOutcome.Action.UNLOADED, reaper.pass().action());
        engine.await("unloaded");
        clock.advance(IDLE_TTL.multipliedBy(3));
        assertEquals(PassOutcome.Action.UNLOADED_EARLIER, reaper.pass().action());
        assertEquals(1, engine.printed().stream().filter("unloaded"::equals).count(), "unloaded once");
        assertTrue(engine.alive());
        assertTrue(Files.exists(record));
        assertTrue(Files.exists(marker));
    }

    /** A recorded, answering engine kept warm by a marker saying {@code minutes}, after a first (idling) pass. */
    private FakeEngine keptWarmFor(String minutes, Reaper reaper) throws Exception {
        FakeEngine engine = recordedEngine();
        Files.writeString(dir.usersDir().resolve("0123456789abcdef.keep-warm"), minutes);
        assertEquals(PassOutcome.Action.IDLING, reaper.pass().action());
        return engine;
    }

    @Test
    void aKeptWarmEngineIsUnloadedAfterTheMinutesItsMarkerNames() throws Exception {
        Reaper reaper = reaper();
        FakeEngine engine = keptWarmFor("1", reaper);
        clock.advance(Duration.ofMinutes(1));
        assertEquals(PassOutcome.Action.UNLOADED, reaper.pass().action(), "lilbee's marker says 1 minute, not " + IDLE_TTL);
        engine.await("unloaded");
    }

    @Test
    void aKeptWarmEngineWhoseMarkerSaysZeroIsNeverUnloaded() throws Exception {
        Reaper reaper = reaper();
        FakeEngine engine = keptWarmFor("0", reaper);
        clock.advance(Duration.ofDays(30));
        assertEquals(PassOutcome.Action.IDLING, reaper.pass().action());
        assertFalse(engine.printed().contains("unloaded"));
    }

    @Test
    void aUserComingBackRestartsTheIdleWindow() throws Exception {
        FakeEngine engine = recordedEngine();
        keepWarm();
        Reaper reaper = reaper();
        reaper.pass();
        clock.advance(IDLE_TTL.minusSeconds(10));
        Peer user = user("back");
        assertEquals(PassOutcome.Action.USERS_LIVE, reaper.pass().action());
        assertTrue(reaper.idleSince().isEmpty());
        user.kill();
        clock.advance(Duration.ofSeconds(30));
        assertEquals(PassOutcome.Action.IDLING, reaper.pass().action(), "the window starts again when the user leaves");
    }

    /**
     * What the WardenEngineHeldUnused alert reads: an engine held with no user from the first pass that finds none,
     * through refused unloads (whose new idle windows do not reset it), until its weights go or a user comes back.
     */
    @Test
    void anEngineHeldWithNoUserIsTimedFromTheFirstPassThatFindsNoneUntilItsWeightsGo() throws Exception {
        FakeEngine engine = recordedEngine("--refuse-unload");
        keepWarm();
        Reaper reaper = reaper();
        assertTrue(reaper.unused().isEmpty(), "no pass yet");
        Instant first = clock.instant();
        reaper.pass();
        assertEquals(Optional.of(new Unused(first, IDLE_TTL)), reaper.unused());
        clock.advance(IDLE_TTL);
        assertEquals(PassOutcome.Action.UNLOAD_REFUSED, reaper.pass().action());
        clock.advance(Duration.ofSeconds(30));
        assertEquals(PassOutcome.Action.IDLING, reaper.pass().action());
        assertEquals(Optional.of(new Unused(first, IDLE_TTL)), reaper.unused(), "a refusal keeps the clock running");
        assertEquals(Duration.ofSeconds(30), reaper.unused().orElseThrow().overdue(clock.instant()));

        Peer user = user("back");
        assertEquals(PassOutcome.Action.USERS_LIVE, reaper.pass().action());
        assertTrue(reaper.unused().isEmpty(), "used again");
        user.kill();
        clock.advance(Duration.ofSeconds(5));
        Instant left = clock.instant();
        reaper.pass();
        assertEquals(Optional.of(new Unused(left, IDLE_TTL)), reaper.unused(), "timed again from the user's exit");
        assertTrue(engine.alive());
    }

    @Test
    void anEngineKeptWarmWithoutLimitIsNeverOverdueAndAStoppedOneIsNoLongerHeld() throws Exception {
        Reaper reaper = reaper();
        keptWarmFor("0", reaper);
        clock.advance(Duration.ofDays(30));
        reaper.pass();
        assertEquals(Unused.NEVER, reaper.unused().orElseThrow().limit());
        assertTrue(reaper.unused().orElseThrow().overdue(clock.instant()).isNegative());

        Files.delete(dir.usersDir().resolve("0123456789abcdef.keep-warm"));
        assertEquals(PassOutcome.Action.STOPPED, reaper.pass().action());
        assertTrue(reaper.unused().isEmpty(), "stopped: no longer held");
    }

    @Test
    void aRefusedUnloadStartsANewIdleWindow() throws Exception {
        FakeEngine engine = recordedEngine("--refuse-unload");
        keepWarm();
        Reaper reaper = reaper();
        reaper.pass();
        clock.advance(IDLE_TTL);
        PassOutcome refused = reaper.pass();
        assertEquals(PassOutcome.Action.UNLOAD_REFUSED, refused.action());
        assertTrue(refused.detail().contains("busy loading"), refused.detail());
        clock.advance(IDLE_TTL.minusSeconds(1));
        assertEquals(PassOutcome.Action.IDLING, reaper.pass().action());
        clock.advance(Duration.ofSeconds(1));
        assertEquals(PassOutcome.Action.UNLOAD_REFUSED, reaper.pass().action());
        assertTrue(engine.alive());
    }

    @Test
    void aKeptWarmEngineThatStopsAnsweringIsCleanedUp() throws Exception {
        FakeEngine engine = engine("--port", "0");
        Path record = engine.writeRecord(dir.root(), "chat", port(), List.of());
        Path marker = keepWarm();
        Reaper reaper = reaper();
        reaper.pass();
        clock.advance(IDLE_TTL);
        PassOutcome outcome = reaper.pass();
        assertEquals(PassOutcome.Action.STOPPED, outcome.action());
        assertTrue(outcome.detail().startsWith("it stopped answering"), outcome.detail());
        assertEquals(143, engine.exitCode(Duration.ofSeconds(10)));
        assertFalse(Files.exists(record));
        assertFalse(Files.exists(marker), "stopping deletes every keep-warm marker");
    }

    @Test
    void anEngineThatIgnoresSigtermGetsSigkill() throws Exception {
        FakeEngine engine = engine("--port", "0", "--ignore-term");
        engine.writeRecord(dir.root(), "chat", port(), List.of());
        PassOutcome outcome = reaper(new EngineUsers(locker), Duration.ofMillis(300), Optional.empty()).pass();
        assertEquals(PassOutcome.Action.STOPPED, outcome.action());
        assertEquals(137, engine.exitCode(Duration.ofSeconds(10)));
    }

    @Test
    void aPassInterruptedWhileTheEngineHasSigtermSendsNoSigkillAndKeepsItsFiles() throws Exception {
        FakeEngine engine = engine("--port", "0", "--ignore-term");
        Path record = engine.writeRecord(dir.root(), "chat", port(), List.of());
        Path marker = keepWarm();
        Reaper reaper = reaper(new EngineUsers(locker), Duration.ofMinutes(5), Optional.empty());
        // Kept warm but not answering: once idle, the pass goes on to stop it, and the engine ignores SIGTERM.
        assertEquals(PassOutcome.Action.IDLING, reaper.pass().action());
        clock.advance(IDLE_TTL);
        java.util.concurrent.CompletableFuture<PassOutcome> outcome = new java.util.concurrent.CompletableFuture<>();
        Thread pass = Thread.ofPlatform().start(() -> outcome.complete(reaper.pass()));
        engine.await("ignored SIGTERM");
        pass.interrupt();
        assertEquals(PassOutcome.Action.INTERRUPTED, outcome.get(10, java.util.concurrent.TimeUnit.SECONDS).action());
        assertTrue(engine.alive(), "no SIGKILL on the way out");
        assertTrue(Files.exists(record) && Files.exists(marker), "the next reaper finishes the stop");
    }

    @Test
    void aPassInterruptedDuringAnUnloadStopsNothing() throws Exception {
        FakeEngine engine = recordedEngine("--slow-unload", "60000");
        Path record = recordFile();
        keepWarm();
        Reaper reaper = reaper();
        assertEquals(PassOutcome.Action.IDLING, reaper.pass().action());
        clock.advance(IDLE_TTL);
        java.util.concurrent.CompletableFuture<PassOutcome> outcome = new java.util.concurrent.CompletableFuture<>();
        Thread pass = Thread.ofPlatform().start(() -> outcome.complete(reaper.pass()));
        engine.await("unloading");
        pass.interrupt();
        PassOutcome interrupted = outcome.get(10, java.util.concurrent.TimeUnit.SECONDS);
        assertEquals(PassOutcome.Action.INTERRUPTED, interrupted.action());
        assertEquals("during an unload", interrupted.detail(), "the pass ends at the unload; it goes on to no stop");
        assertTrue(engine.alive());
        assertFalse(engine.printed().stream().anyMatch(l -> l.startsWith("term ")), "an interrupted unload is no reason to stop");
        assertTrue(Files.exists(record));
    }

    @Test
    void anOrphanedLlamaServerOnARecordedPortIsReaped() throws Exception {
        int memberPort = port();
        FakeEngine engine = engine("--port", "0", "--server-port", Integer.toString(memberPort));
        engine.await("server " + memberPort);
        engine.writeRecord(dir.root(), "chat", port(), List.of(memberPort));
        long server = llamaServerOn(memberPort).orElseThrow().pid();
        // llama-swap dies by SIGKILL; its llama-server, in a group of its own, lives on with its memory.
        ProcessHandle.of(engine.pid()).orElseThrow().destroyForcibly();
        engine.exitCode(Duration.ofSeconds(10));
        assertTrue(processes.alive(server));
        PassOutcome outcome = reaper().pass();
        assertEquals(PassOutcome.Action.STOPPED, outcome.action());
        assertTrue(outcome.detail().contains("reaped 1 leftover process"), outcome.detail());
        assertFalse(processes.alive(server));
    }

    @Test
    void aLlamaServerOnAnotherPortIsSpared() throws Exception {
        int unrecorded = port();
        FakeEngine other = track(FakeEngine.startLlamaServer(unrecorded));
        FakeEngine engine = engine("--port", "0");
        engine.writeRecord(dir.root(), "chat", port(), List.of(port()));
        Awaits.llamaServer(processes, unrecorded);
        assertEquals(PassOutcome.Action.STOPPED, reaper().pass().action());
        assertTrue(other.alive());
    }

    @Test
    void aLlamaServerWhoseParentIsALiveLlamaSwapIsSpared() throws Exception {
        int memberPort = port();
        // Another llama-swap, not recorded here, runs a llama-server on the port the record names.
        FakeEngine neighbour = engine("--port", "0", "--server-port", Integer.toString(memberPort));
        neighbour.await("server " + memberPort);
        FakeEngine engine = engine("--port", "0");
        engine.writeRecord(dir.root(), "chat", port(), List.of(memberPort));
        long server = llamaServerOn(memberPort).orElseThrow().pid();
        assertEquals(PassOutcome.Action.STOPPED, reaper().pass().action());
        assertEquals(143, engine.exitCode(Duration.ofSeconds(10)));
        assertTrue(processes.alive(server));
        assertTrue(neighbour.alive());
    }

    @Test
    void aRecordPointingAtAProcessThatIsNotLlamaSwapIsNeverSignalled() throws Exception {
        FakeEngine stranger = track(FakeEngine.startStranger("postgres"));
        Path record = stranger.writeRecord(dir.root(), "chat", port(), List.of());
        PassOutcome outcome = reaper().pass();
        assertEquals(PassOutcome.Action.STOPPED, outcome.action());
        assertTrue(outcome.detail().contains("did not signal: pid " + stranger.pid() + " runs 'postgres'"), outcome.detail());
        assertTrue(stranger.alive());
        assertFalse(Files.exists(record), "the record names an engine that is gone");
    }

    /**
     * A neighbour copies the slot's record into the legacy dir, where no user is: the legacy dir's idle rule
     * must not stop an engine the slot's live user holds. Once no dir has a user, it is stopped.
     */
    @Test
    void aForgedRecordInAnotherDirBesideALiveUserNeverStopsTheEngine() throws Exception {
        FakeEngine engine = recordedEngine();
        Peer user = user("0123456789abcdef");
        EngineDir legacy = new EngineDir(Files.createDirectories(root.resolve("legacy")));
        Files.copy(recordFile(), legacy.root().resolve(recordFile().getFileName()));
        Reaper legacyReaper = SystemReaper.of(legacy, new EngineUsers(locker), SystemReaper.client(), TERM, clock, IDLE_TTL,
                Optional.empty(), List.of(dir));
        PassOutcome dry = legacyReaper.dryRun();
        assertEquals(PassOutcome.Action.NOTHING_TO_DO, dry.action(), "the dry run decides as the pass: " + dry.detail());
        PassOutcome outcome = legacyReaper.pass();
        assertEquals(PassOutcome.Action.NOTHING_TO_DO, outcome.action(), outcome.detail());
        assertTrue(engine.alive(), "the slot's user holds it");
        assertEquals(1, legacy.recordFiles().size(), "the forged record is left in place");
        user.kill();
        assertEquals(PassOutcome.Action.STOPPED, legacyReaper.dryRun().action(), "the dry run, once no dir has a user");
        assertEquals(PassOutcome.Action.STOPPED, legacyReaper.pass().action(), "no dir has a user any more");
        assertEquals(143, engine.exitCode(Duration.ofSeconds(10)), "SIGTERM: the pass does not wait for the exit");
    }

    /** A record owned by another UID than the engine's: warden would signal on behalf of one who could not. */
    @Test
    void aRecordOwnedByAnotherUserThanTheEngineIsNeverSignalled() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue("0".equals(FileLocker.currentUid()), "chown needs root, as CI has");
        FakeEngine engine = recordedEngine();
        Files.setAttribute(recordFile(), "unix:uid", 4242);
        PassOutcome outcome = reaper().pass();
        assertTrue(engine.alive(), "never signalled: " + outcome.detail());
        assertTrue(outcome.detail().contains("owned by UID 4242"), outcome.detail());
    }

    @Test
    void aRecordWhoseStartTimeDoesNotMatchIsNeverSignalled() throws Exception {
        FakeEngine engine = engine("--port", "0");
        Files.writeString(dir.root().resolve("llama-swap.state.chat.1.json"), String.format(java.util.Locale.ROOT,
                "{\"pid\": %d, \"pgid\": %d, \"created_at\": %.3f}", engine.pid(), engine.pid(), engine.createdAt() - 60));
        PassOutcome outcome = reaper().pass();
        assertTrue(outcome.detail().contains("the pid was reused"), outcome.detail());
        assertTrue(engine.alive());
    }

    @Test
    void pidOneAndWardensOwnPidAreNeverSignalled() throws Exception {
        Files.writeString(dir.root().resolve("llama-swap.state.chat.1.json"), "{\"pid\": 1, \"pgid\": 1}");
        Files.writeString(dir.root().resolve("llama-swap.state.embed.2.json"),
                "{\"pid\": " + ProcessHandle.current().pid() + "}");
        PassOutcome outcome = reaper().pass();
        assertTrue(outcome.detail().contains("pid 1 is never signalled"), outcome.detail());
        assertTrue(outcome.detail().contains("is warden itself"), outcome.detail());
    }

    @Test
    void aCorruptRecordIsSkippedAndKept() throws Exception {
        Path corrupt = Files.writeString(dir.root().resolve("llama-swap.state.chat.9.json"), "{\"pid\": ");
        assertEquals(PassOutcome.Action.NOTHING_TO_DO, reaper().pass().action());
        assertTrue(Files.exists(corrupt));
    }

    @Test
    void anEngineLilbeeDidNotStartIsUnloadedAfterTheIdleTimeAndNeverSignalled() throws Exception {
        int proxy = port();
        FakeEngine engine = engine("--port", Integer.toString(proxy));
        Reaper reaper = reaper(new EngineUsers(locker), TERM, Optional.of(URI.create("http://127.0.0.1:" + proxy)));
        Peer user = user("lilbee-1");
        assertEquals(PassOutcome.Action.USERS_LIVE, reaper.pass().action());
        user.kill();
        assertEquals(PassOutcome.Action.IDLING, reaper.pass().action());
        clock.advance(IDLE_TTL);
        assertEquals(PassOutcome.Action.UNLOADED, reaper.pass().action());
        engine.await("unloaded");
        assertTrue(engine.alive());
    }

    @Test
    void aDryRunSaysWhatItWouldDoAndDoesNothing() throws Exception {
        FakeEngine engine = recordedEngine();
        Path record = recordFile();
        Peer dead = user("dead");
        dead.kill();
        PassOutcome outcome = reaper().dryRun();
        assertEquals(PassOutcome.Action.STOPPED, outcome.action());
        assertTrue(outcome.detail().startsWith("would stop 1 engine(s)"), outcome.detail());
        assertTrue(engine.alive());
        assertTrue(Files.exists(record));
        assertTrue(Files.exists(dir.userLock("dead")), "a dry run removes nothing");
        assertFalse(Files.exists(dir.buildLock()), "a dry run takes no lock");
    }

    @Test
    void aNewEngineAfterAStopIsWatchedToo() throws Exception {
        Reaper reaper = reaper();
        FakeEngine first = engine("--port", "0");
        first.writeRecord(dir.root(), "chat", port(), List.of());
        assertEquals(PassOutcome.Action.STOPPED, reaper.pass().action());
        FakeEngine second = engine("--port", "0");
        Peer user = user("again");
        second.writeRecord(dir.root(), "chat", port(), List.of());
        assertEquals(PassOutcome.Action.USERS_LIVE, reaper.pass().action());
        user.kill();
        assertEquals(PassOutcome.Action.STOPPED, reaper.pass().action());
        assertEquals(143, second.exitCode(Duration.ofSeconds(10)));
    }

    /** A record written by hand: a forged or incomplete one. */
    private Path forgedRecord(String json) throws IOException {
        return Files.writeString(dir.root().resolve("llama-swap.state.chat.99.json"), json);
    }

    @Test
    void aRecordWithoutCreatedAtIsNeverSignalled() throws Exception {
        FakeEngine engine = engine("--port", "0");
        forgedRecord("{\"pid\": " + engine.pid() + ", \"pgid\": " + engine.pid() + ", \"name\": \"llama-swap\"}");
        PassOutcome outcome = reaper().pass();
        assertTrue(outcome.detail().contains("the record has no created_at"), outcome.detail());
        assertTrue(engine.alive(), "a pid that cannot be told from a reused one is never signalled");
    }

    @Test
    void aProcessWhoseNameOnlyContainsLlamaSwapIsNeverSignalled() throws Exception {
        FakeEngine exporter = track(FakeEngine.startStranger("llama-swap-exporter"));
        exporter.writeRecord(dir.root(), "chat", port(), List.of());
        PassOutcome outcome = reaper().pass();
        assertTrue(outcome.detail().contains("runs 'llama-swap-exporter', not llama-swap"), outcome.detail());
        assertTrue(exporter.alive());
    }

    /** A llama-swap whose group another process leads: only llama-swap itself gets the signal. */
    @Test
    void aGroupLlamaSwapDoesNotLeadIsNotSignalled() throws Exception {
        String javaCommand = ProcessHandle.current().info().command().orElse("java");
        Process leader = new ProcessBuilder("setsid", "bash", "-c", "(exec -a llama-swap \"$0\" -Xmx24m -XX:TieredStopAtLevel=1"
                + " -cp \"$1\" dev.warden.testing.FakeLlamaSwap --port 0) & exec -a group-leader sleep 600", javaCommand,
                System.getProperty("java.class.path")).start();
        track((AutoCloseable) () -> {
            ProcessHandle.of(leader.pid()).ifPresent(h -> h.descendants().forEach(ProcessHandle::destroyForcibly));
            leader.destroyForcibly().waitFor();
        });
        ProcessInfo[] swap = new ProcessInfo[1];
        dev.warden.testing.Await.until("the llama-swap in the leader's group runs", () -> {
            swap[0] = processes.all().stream().filter(p -> p.ppid() == leader.pid() && p.isLlamaSwap()).findFirst().orElse(null);
            return swap[0] != null && swap[0].start().isPresent();
        });
        assertEquals(leader.pid(), swap[0].pgid());
        forgedRecord(String.format(java.util.Locale.ROOT, "{\"pid\": %d, \"pgid\": %d, \"created_at\": %.3f, \"name\": \"llama-swap\"}",
                swap[0].pid(), leader.pid(), swap[0].start().orElseThrow().toEpochMilli() / 1000.0));
        assertEquals(PassOutcome.Action.STOPPED, reaper().pass().action());
        dev.warden.testing.Await.until("llama-swap got the SIGTERM", () -> !processes.alive(swap[0].pid()));
        assertTrue(leader.isAlive(), "the group's leader, which is not llama-swap, was not signalled");
    }

    @Test
    void aForgedRecordOfADeadEngineLeavesAStandaloneLlamaServerOnItsPortAlone() throws Exception {
        int standalonePort = port();
        FakeEngine standalone = track(FakeEngine.startLlamaServer(standalonePort));
        Awaits.llamaServer(processes, standalonePort);
        Process gone = new ProcessBuilder("true").start();
        gone.waitFor();
        forgedRecord(String.format(java.util.Locale.ROOT, "{\"pid\": %d, \"created_at\": %.3f, \"name\": \"llama-swap\","
                + " \"member_ports\": [%d]}", gone.pid(), System.currentTimeMillis() / 1000.0 - 60, standalonePort));
        PassOutcome outcome = reaper().pass();
        assertEquals(PassOutcome.Action.STOPPED, outcome.action());
        assertFalse(outcome.detail().contains("reaped"), outcome.detail());
        assertTrue(standalone.alive(), "a llama-server outside the engine's session is not the engine's");
    }

    /** A neighbour swaps engine-users/ for a link to a directory of its choosing. */
    @Test
    void aUsersDirSwappedForALinkIsNeverListedOrPurged() throws Exception {
        Path elsewhere = Files.createDirectories(root.resolve("elsewhere"));
        Path unlocked = Files.writeString(elsewhere.resolve("someone.lock"), "");
        Path marker = Files.writeString(elsewhere.resolve("0123456789abcdef.keep-warm"), "");
        Files.delete(dir.usersDir());
        Files.createSymbolicLink(dir.usersDir(), elsewhere);
        FakeEngine engine = recordedEngine();
        assertEquals(PassOutcome.Action.STOPPED, reaper().pass().action(), "no user and no marker is seen through the link");
        assertEquals(143, engine.exitCode(Duration.ofSeconds(10)));
        assertTrue(Files.exists(unlocked), "an unlocked *.lock behind the link is not deleted");
        assertTrue(Files.exists(marker), "a *.keep-warm behind the link is not deleted");
    }

    private Optional<ProcessInfo> llamaServerOn(int port) {
        return Awaits.llamaServer(processes, port);
    }

    /** Waits until a llama-server listens on a port; the fake engine starts it asynchronously. */
    static final class Awaits {
        static Optional<ProcessInfo> llamaServer(ProcessTable processes, int port) {
            Optional<ProcessInfo>[] found = new Optional[] {Optional.empty()};
            dev.warden.testing.Await.until("a llama-server runs on port " + port, () -> {
                found[0] = processes.all().stream()
                        .filter(p -> p.isLlamaServer() && p.port().isPresent() && p.port().getAsInt() == port).findFirst();
                return found[0].isPresent();
            });
            return found[0];
        }
    }
}
