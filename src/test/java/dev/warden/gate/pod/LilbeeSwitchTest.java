package dev.warden.gate.pod;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.gate.GateAction.Word;
import dev.warden.lock.FileId;
import dev.warden.lock.FileLocker;
import dev.warden.lock.NativePosix;
import dev.warden.lock.SystemProcFs;
import dev.warden.testing.Await;
import dev.warden.time.Moment;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The switch, a real socket, supervisors and neighbours played by this test: one supervisor per switch (the first to
 * say hello, until it leaves; every other connection refused, never the supervisor dropped), its reports and its
 * step-down alone heard, nothing passed to warden kept, each hello answered, and the socket put back at its path; and
 * the answer to "may the Lease go?": a stop counts as done only once the supervisor answered that very stop, or said
 * it exits with its lilbee gone; with none connected, only if the last to leave said so.
 */
class LilbeeSwitchTest {

    @TempDir
    Path dir;

    private LilbeeSwitch lilbeeSwitch;
    private Moment now = new Moment(1_000_000_000L);

    @BeforeEach
    void listen() throws IOException {
        lilbeeSwitch = LilbeeSwitch.open(new NativePosix(), new SystemProcFs(), dir.resolve("switch.sock"),
                Integer.parseInt(FileLocker.currentUid()));
    }

    @AfterEach
    void close() {
        lilbeeSwitch.close();
    }

    /** A supervisor, connected, greeted, and reported (warden's words wait for its first report). */
    private SocketChannel supervisor() throws IOException {
        SocketChannel channel = connect();
        send(channel, "hello " + LilbeeSwitch.PROTOCOL + " 1");
        send(channel, "gate none\nlilbee none\npermit 0\nwarm none");
        Await.until("the supervisor is greeted", () -> {
            lilbeeSwitch.poll(now);
            return lilbeeSwitch.report().isPresent();
        });
        return channel;
    }

    private SocketChannel connect() throws IOException {
        SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX);
        channel.connect(UnixDomainSocketAddress.of(dir.resolve("switch.sock")));
        return channel;
    }

    /** What warden said on {@code channel} (polling meanwhile), until a line {@code until} accepts; empty if it closed. */
    private String heard(SocketChannel channel, java.util.function.Predicate<String> until) throws IOException {
        channel.configureBlocking(false);
        StringBuilder text = new StringBuilder();
        ByteBuffer buffer = ByteBuffer.allocate(4096);
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (System.nanoTime() < deadline) {
            lilbeeSwitch.poll(now);
            buffer.clear();
            int read;
            try {
                read = channel.read(buffer);
            } catch (IOException e) {
                // Closed with what this test sent unread: a reset.
                return text.toString();
            }
            if (read < 0) {
                return text.toString();
            }
            text.append(new String(buffer.array(), 0, read, StandardCharsets.US_ASCII));
            if (text.toString().lines().anyMatch(until)) {
                return text.toString();
            }
        }
        throw new AssertionError("warden said only: " + text);
    }

    private static void send(SocketChannel channel, String line) throws IOException {
        channel.write(ByteBuffer.wrap((line + "\n").getBytes(StandardCharsets.US_ASCII)));
    }

    private void stop() {
        lilbeeSwitch.say(new Word.Stop("test"), now, OptionalInt.empty());
    }

    /** The last stop counts as done once the switch has read {@code line}. */
    private void doneAfter(SocketChannel channel, String line) throws IOException {
        send(channel, line);
        Await.until("the stop is done after " + line, () -> {
            lilbeeSwitch.poll(now);
            return lilbeeSwitch.stopDone();
        });
    }

    /**
     * The report keeps each word's last value whatever order they come in: the lilbee it runs, the permit it holds, and
     * the process it prepared (status only), none of them reset by another word.
     */
    @Test
    void eachWordOfTheReportKeepsItsLastValue() throws IOException {
        try (SocketChannel supervisor = supervisor()) {
            send(supervisor, "warm 4242");
            send(supervisor, "lilbee none");
            send(supervisor, "permit 0");
            Await.until("the report", () -> {
                lilbeeSwitch.poll(now);
                return lilbeeSwitch.report().isPresent() && lilbeeSwitch.report().get().warm().isPresent();
            });
            assertEquals(new SupervisorReport(Optional.empty(), Optional.empty(), OptionalLong.of(4242), Optional.empty()),
                    lilbeeSwitch.report().get());
            send(supervisor, "gate 66 1234");
            send(supervisor, "lilbee 4242 777 5000");
            send(supervisor, "permit 9000");
            send(supervisor, "warm none");
            Await.until("the next report", () -> {
                lilbeeSwitch.poll(now);
                return lilbeeSwitch.report().get().warm().isEmpty();
            });
            assertEquals(new SupervisorReport(Optional.of(new SupervisorReport.Running(4242, 777, new Moment(5000))),
                    Optional.of(new Moment(9000)), OptionalLong.empty(), Optional.of(new FileId(66, 1234))),
                    lilbeeSwitch.report().get());
            send(supervisor, "warm not-a-pid");
            send(supervisor, "lilbee none");
            Await.until("the last report", () -> {
                lilbeeSwitch.poll(now);
                return lilbeeSwitch.report().get().lilbee().isEmpty();
            });
            assertEquals(Optional.of(new Moment(9000)), lilbeeSwitch.report().get().permit(), "a word that does not parse says nothing");
        }
    }

    @Test
    void aStopIsDoneOnceAnsweredByItsNumber() throws IOException {
        try (SocketChannel supervisor = supervisor()) {
            assertFalse(lilbeeSwitch.stopDone(), "no stop said yet");
            stop();
            lilbeeSwitch.poll(now);
            assertFalse(lilbeeSwitch.stopDone(), "not answered yet");
            send(supervisor, "stopped 2");
            heard(supervisor, line -> line.startsWith("stop 1 "));
            assertFalse(lilbeeSwitch.stopDone(), "an answer to a stop not said here (another warden's) says nothing");
            doneAfter(supervisor, "stopped 1");
            // A start and a new stop: the old answer no longer counts.
            now = now.plus(Duration.ofSeconds(1));
            lilbeeSwitch.say(new Word.Go(now.plus(Duration.ofSeconds(5))), now, OptionalInt.empty());
            stop();
            lilbeeSwitch.poll(now);
            assertFalse(lilbeeSwitch.stopDone(), "the stop before was answered, not this one");
            doneAfter(supervisor, "stopped 2");
        }
    }

    @Test
    void aSupervisorThatSaysItExitsHasDoneAnyStopAndSoHasOneThatLeftSo() throws IOException {
        SocketChannel supervisor = supervisor();
        stop();
        doneAfter(supervisor, "exiting");
        supervisor.close();
        Await.until("the supervisor has left", () -> {
            lilbeeSwitch.poll(now);
            return !lilbeeSwitch.connected();
        });
        assertTrue(lilbeeSwitch.stopDone(), "the last to leave said it exited, its lilbee gone");
    }

    @Test
    void aSupervisorThatLeftWithoutAWordHasDoneNothing() throws IOException {
        SocketChannel supervisor = supervisor();
        stop();
        supervisor.close();
        Await.until("the supervisor has left", () -> {
            lilbeeSwitch.poll(now);
            return !lilbeeSwitch.connected();
        });
        assertFalse(lilbeeSwitch.stopDone(), "killed, its lilbee may still hold a permit");
        // A newer supervisor that has not answered: not done either, whatever an older one said.
        try (SocketChannel newer = supervisor()) {
            stop();
            lilbeeSwitch.poll(now);
            assertFalse(lilbeeSwitch.stopDone());
            doneAfter(newer, "stopped 1");
        }
    }

    /**
     * Every process of lilbee's container can connect: the first to say hello is the supervisor until it leaves, and
     * one that connects beside it is refused at once, never heard (its report, its step-down), and never the one
     * dropped. Once the supervisor has left, the next to say hello is.
     */
    @Test
    void oneSupervisorPerSwitchAndEveryOtherConnectionRefused() throws IOException {
        try (SocketChannel supervisor = supervisor(); SocketChannel neighbour = connect()) {
            send(supervisor, "lilbee 4242 777 5000");
            send(neighbour, "hello " + LilbeeSwitch.PROTOCOL + " 2");
            send(neighbour, "lilbee none");
            send(neighbour, "step-down");
            assertEquals("", heard(neighbour, line -> false), "refused: closed without a word");
            Await.until("the supervisor's report", () -> {
                lilbeeSwitch.poll(now);
                return lilbeeSwitch.report().flatMap(SupervisorReport::lilbee).isPresent();
            });
            assertEquals(OptionalLong.empty(), lilbeeSwitch.takeStepDown(), "a neighbour's step-down is not heard");
            assertEquals(OptionalLong.of(ProcessHandle.current().pid()), lilbeeSwitch.supervisorPid(), "still the first");
            supervisor.close();
            Await.until("the supervisor has left", () -> {
                lilbeeSwitch.poll(now);
                return !lilbeeSwitch.connected();
            });
        }
        try (SocketChannel next = supervisor()) {
            assertTrue(lilbeeSwitch.connected(), "the next to say hello is the supervisor");
        }
    }

    /** The supervisor's step-down is taken once a connection: it says it when SIGTERMed, and terminates. */
    @Test
    void aStepDownIsTakenOnceAConnection() throws IOException {
        try (SocketChannel supervisor = supervisor()) {
            send(supervisor, "step-down");
            Await.until("the step-down", () -> {
                lilbeeSwitch.poll(now);
                return lilbeeSwitch.takeStepDown().equals(OptionalLong.of(ProcessHandle.current().pid()));
            });
            send(supervisor, "step-down");
            send(supervisor, "stopped 0");
            Await.until("the rest read", () -> {
                lilbeeSwitch.poll(now);
                return lilbeeSwitch.takeStepDown().isEmpty();
            });
            for (int i = 0; i < 20; i++) {
                lilbeeSwitch.poll(now);
                assertEquals(OptionalLong.empty(), lilbeeSwitch.takeStepDown(), "said again: not taken again");
            }
        }
    }

    /** Each hello is answered with warden's clock now: a supervisor that read one late asks again, and is answered. */
    @Test
    void everyHelloIsAnsweredWithTheClockNow() throws IOException {
        try (SocketChannel supervisor = supervisor()) {
            assertTrue(heard(supervisor, line -> line.startsWith("hello ")).contains("hello 1 " + now.nanos()));
            now = now.plus(Duration.ofSeconds(3));
            send(supervisor, "hello " + LilbeeSwitch.PROTOCOL + " 1");
            assertTrue(heard(supervisor, line -> line.equals("hello 1 " + now.nanos())).contains("hello 1 " + now.nanos()));
        }
    }

    /**
     * The one descriptor kept is the one the supervisor passes with its gate line (the gate lock given back to a warden
     * it believes), offered once; any other it passes, with another line, is closed, as is one a connection passes
     * before it is the supervisor.
     */
    @Test
    void onlyTheSupervisorsGateLineGivesADescriptor() throws Exception {
        long before;
        try (var fds = Files.list(Path.of("/proc/self/fd"))) {
            before = fds.count();
        }
        Path file = Files.writeString(dir.resolve("passed"), "");
        Process supervisor = new ProcessBuilder("python3", "-c", String.join("\n",
                "import socket, sys, time",
                "s = socket.socket(socket.AF_UNIX)",
                "s.connect(sys.argv[1])",
                "f = open(sys.argv[2])",
                "socket.send_fds(s, [b'hello 1 1\\n'], [f.fileno()])",
                "time.sleep(0.5)",
                "socket.send_fds(s, [b'start 1\\n'], [f.fileno()])",
                "socket.send_fds(s, [b'gate 1 2\\nlilbee none\\npermit 0\\n'], [f.fileno()])",
                "s.send(b'warm 4242\\n')",
                "time.sleep(30)"), dir.resolve("switch.sock").toString(), file.toString()).inheritIO().start();
        try {
            Await.until("what it sent is read", () -> {
                lilbeeSwitch.poll(now);
                return lilbeeSwitch.report().filter(r -> r.warm().isPresent()).isPresent();
            });
            OptionalInt offered = lilbeeSwitch.takeOfferedGate();
            assertTrue(offered.isPresent(), "the gate line's descriptor");
            NativePosix posix = new NativePosix();
            try {
                assertEquals(posix.statAt(NativePosix.AT_FDCWD, file.toString()).id(), posix.fstat(offered.getAsInt()).id());
                assertEquals(OptionalInt.empty(), lilbeeSwitch.takeOfferedGate(), "offered once");
                long after;
                try (var fds = Files.list(Path.of("/proc/self/fd"))) {
                    after = fds.count();
                }
                assertEquals(before + 2, after, "the supervisor's connection and the descriptor offered, no other");
            } finally {
                posix.close(offered.getAsInt());
            }
        } finally {
            supervisor.destroyForcibly().waitFor();
        }
    }

    /**
     * warden says nothing to a supervisor before its first report, which it sends once it believes warden: a word said
     * with the hello's answer (a restarted warden's stop, its gate lock not given back yet) would be heard at once.
     */
    @Test
    void wordsWaitForTheSupervisorsFirstReport() throws IOException {
        try (SocketChannel supervisor = connect()) {
            send(supervisor, "hello " + LilbeeSwitch.PROTOCOL + " 1");
            Await.until("the supervisor is greeted", () -> {
                lilbeeSwitch.poll(now);
                return lilbeeSwitch.connected();
            });
            now = now.plus(Duration.ofSeconds(1));
            stop();
            send(supervisor, "hello " + LilbeeSwitch.PROTOCOL + " 1");
            String before = heard(supervisor, line -> line.equals("hello 1 " + now.nanos()));
            assertFalse(before.contains("stop"), "nothing but hellos before its report: " + before);
            send(supervisor, "gate none\nlilbee none\npermit 0\nwarm none");
            Await.until("its report", () -> {
                lilbeeSwitch.poll(now);
                return lilbeeSwitch.report().isPresent();
            });
            stop();
            assertTrue(heard(supervisor, line -> line.startsWith("stop ")).contains("stop 1 test"));
        }
    }

    /** A connection whose first line is not a hello is let go: a supervisor says it first thing. */
    @Test
    void aConnectionThatDoesNotSayHelloFirstIsLetGo() throws IOException {
        try (SocketChannel neighbour = connect()) {
            send(neighbour, "lilbee none");
            assertEquals("", heard(neighbour, line -> false), "closed without a word");
        }
        try (SocketChannel next = supervisor()) {
            assertTrue(lilbeeSwitch.connected(), "room for the supervisor");
        }
    }

    /** A socket renamed over the switch's path (a writer of its directory) is replaced by warden's again. */
    @Test
    void theSocketIsPutBackWhenReplaced() throws Exception {
        Path path = dir.resolve("switch.sock");
        Files.delete(path);
        Files.writeString(dir.resolve("squat"), "");
        Files.move(dir.resolve("squat"), path);
        lilbeeSwitch.poll(now);
        try (SocketChannel supervisor = supervisor()) {
            assertTrue(lilbeeSwitch.connected(), "warden listens at its path again");
        }
    }
}
