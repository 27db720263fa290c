package dev.warden.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.gate.GateAction.Word;
import dev.warden.lock.FileLocker;
import dev.warden.lock.NativePosix;
import dev.warden.testing.Await;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
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
 * The switch's answer to "may the Lease go?": a stop counts as done only once every supervisor connected answered that
 * very stop, or said it exits with its lilbee gone; with none connected, only if the last to leave said so. A real
 * socket, a supervisor played by this test.
 */
class LilbeeSwitchTest {

    @TempDir
    Path dir;

    private LilbeeSwitch lilbeeSwitch;
    private Moment now = new Moment(1_000_000_000L);

    @BeforeEach
    void listen() throws IOException {
        lilbeeSwitch = LilbeeSwitch.open(new NativePosix(), dir.resolve("switch.sock"), Integer.parseInt(FileLocker.currentUid()));
    }

    @AfterEach
    void close() {
        lilbeeSwitch.close();
    }

    /** A supervisor, connected and greeted. */
    private SocketChannel supervisor() throws IOException {
        SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX);
        channel.connect(UnixDomainSocketAddress.of(dir.resolve("switch.sock")));
        send(channel, "hello " + LilbeeSwitch.PROTOCOL + " 1");
        Await.until("the supervisor is greeted", () -> {
            lilbeeSwitch.poll(now);
            return lilbeeSwitch.connected();
        });
        return channel;
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
            assertEquals(new LilbeeSwitch.Report(Optional.empty(), Optional.empty(), OptionalLong.of(4242)),
                    lilbeeSwitch.report().get());
            send(supervisor, "lilbee 4242 777 5000");
            send(supervisor, "permit 9000");
            send(supervisor, "warm none");
            Await.until("the next report", () -> {
                lilbeeSwitch.poll(now);
                return lilbeeSwitch.report().get().warm().isEmpty();
            });
            assertEquals(new LilbeeSwitch.Report(Optional.of(new LilbeeSwitch.Running(4242, 777, new Moment(5000))),
                    Optional.of(new Moment(9000)), OptionalLong.empty()), lilbeeSwitch.report().get());
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
}
