package dev.warden.gate.pod;

import dev.warden.lock.FileId;
import dev.warden.time.Moment;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * What the supervisor last reported: the lilbee it runs, if any, the end of the permit it holds, if any, the pid of
 * the process it has prepared to run lilbee in on the next permit, if any (status only: it holds nothing), and the
 * gate file whose lock it holds for its lilbee, if any.
 */
public record SupervisorReport(Optional<Running> lilbee, Optional<Moment> permit, OptionalLong warm,
        Optional<FileId> gate) {

    static final SupervisorReport NOTHING = new SupervisorReport(Optional.empty(), Optional.empty(), OptionalLong.empty(),
            Optional.empty());

    SupervisorReport with(Optional<Running> lilbee) {
        return new SupervisorReport(lilbee, permit, warm, gate);
    }

    SupervisorReport withPermit(Optional<Moment> permit) {
        return new SupervisorReport(lilbee, permit, warm, gate);
    }

    SupervisorReport withWarm(OptionalLong warm) {
        return new SupervisorReport(lilbee, permit, warm, gate);
    }

    SupervisorReport withGate(Optional<FileId> gate) {
        return new SupervisorReport(lilbee, permit, warm, gate);
    }

    /**
     * This report with one of its lines taken in ({@code lilbee}, {@code permit}, {@code warm} or {@code gate});
     * unchanged by any other line, or one of the wrong length.
     *
     * @throws NumberFormatException a number that does not parse
     */
    SupervisorReport heard(String[] words) {
        return switch (words[0]) {
            case "lilbee" -> words.length == 2 && words[1].equals("none") ? with(Optional.empty())
                    : words.length == 4 ? with(Optional.of(new Running(Long.parseLong(words[1]), Long.parseLong(words[2]),
                            new Moment(Long.parseLong(words[3]))))) : this;
            case "permit" -> words.length != 2 ? this : withPermit(Long.parseLong(words[1]) == 0 ? Optional.empty()
                    : Optional.of(new Moment(Long.parseLong(words[1]))));
            case "warm" -> words.length != 2 ? this : withWarm(words[1].equals("none") ? OptionalLong.empty()
                    : OptionalLong.of(Long.parseLong(words[1])));
            case "gate" -> words.length == 2 && words[1].equals("none") ? withGate(Optional.empty())
                    : words.length == 3 ? withGate(Optional.of(new FileId(Long.parseLong(words[1]),
                            Long.parseLong(words[2])))) : this;
            default -> this;
        };
    }

    /** A lilbee as its supervisor names it: pid, start time in clock ticks, and when it was started (monotonic). */
    public record Running(long pid, long startTicks, Moment launched) {
    }
}
