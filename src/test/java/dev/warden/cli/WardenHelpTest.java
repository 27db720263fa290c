package dev.warden.cli;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** What a newcomer reads first: {@code warden --help} and the command list in it. */
class WardenHelpTest {

    private final CommandLine warden = new CommandLine(WardenCommand.class);

    /** Every step of lilbee's own resolution of the data root, in its order (docs/configuration.md's table). */
    @Test
    void theTopHelpNamesEveryStepOfLilbeesDataRootInOrder() {
        String help = warden.getUsageMessage(CommandLine.Help.Ansi.OFF).replaceAll("\\s+", " ");
        int at = 0;
        for (String step : List.of("--global", "--data-root DIR", "$LILBEE_DATA,", "$LILBEE_DATA_ROOT", "data_root in config.toml",
                "(.lilbee/) at or above", "$XDG_DATA_HOME/lilbee", "~/.local/share/lilbee", "`warden status`")) {
            int found = help.indexOf(step, at);
            assertTrue(found >= 0, "warden --help does not name " + step + " after the steps before it: " + help);
            at = found + step.length();
        }
    }

    /** The first line of each command's description is its summary in the list of commands: a whole sentence. */
    @Test
    void everyCommandsSummaryIsASentence() {
        List<CommandLine> commands = new ArrayList<>(List.of(warden));
        for (int i = 0; i < commands.size(); i++) {
            CommandLine command = commands.get(i);
            commands.addAll(command.getSubcommands().values());
            String[] description = command.getCommandSpec().usageMessage().description();
            String summary = description.length == 0 ? "" : description[0].strip();
            assertTrue(summary.endsWith("."), command.getCommandSpec().qualifiedName() + "'s summary is not a sentence: " + summary);
        }
    }
}
