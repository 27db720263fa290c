package dev.warden.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.InvocationTargetException;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class WardenMainTest {

    /**
     * What fabric8's client said when a model class was missing: its own message only "An error has
     * occurred.", the reason three causes down. The one line warden prints carries the reason.
     */
    @Test
    void anUnexpectedFailureIsDescribedWithItsCauses() {
        Exception missing = new ClassNotFoundException("io.fabric8.kubernetes.api.model.batch.v1.Job");
        Error noClass = new NoClassDefFoundError("io/fabric8/kubernetes/api/model/batch/v1/Job");
        noClass.initCause(missing);
        RuntimeException library = new RuntimeException("An error has occurred.", new InvocationTargetException(noClass));

        assertEquals("An error has occurred. (caused by InvocationTargetException)"
                + " (caused by NoClassDefFoundError: io/fabric8/kubernetes/api/model/batch/v1/Job)"
                + " (caused by ClassNotFoundException: io.fabric8.kubernetes.api.model.batch.v1.Job)", WardenMain.describe(library));
    }

    /** serve is built alone, and answers a usage error exactly as the whole command line does. */
    @Test
    void serveIsBuiltAloneAndRefusesAsTheWholeCommandLineDoes() {
        CommandLine serve = WardenMain.commandLine(CommandLine.defaultFactory(), "serve", "--no-such-option");
        assertEquals(Set.of("serve"), serve.getSubcommands().keySet());
        CommandLine whole = WardenMain.commandLine(CommandLine.defaultFactory(), "status");
        assertEquals(Set.of("serve", "status", "exec", "reap", "engine", "step-down"), whole.getSubcommands().keySet());
        for (String[] args : List.of(new String[] {"serve", "--no-such-option"}, new String[] {"serve", "--mode", "neither"},
                new String[] {"serve", "extra"})) {
            assertEquals(refusal(whole, args), refusal(WardenMain.commandLine(CommandLine.defaultFactory(), args), args),
                    String.join(" ", args));
        }
        // Help comes from the whole model, which knows every command.
        assertEquals(6, WardenMain.commandLine(CommandLine.defaultFactory(), "serve", "--help").getSubcommands().size());
    }

    private static String refusal(CommandLine commandLine, String... args) {
        StringWriter err = new StringWriter();
        commandLine.setErr(new PrintWriter(err));
        assertEquals(ExitCodes.USAGE, commandLine.execute(args));
        return err.toString();
    }

    @Test
    void aCauseTheMessageAlreadyNamesIsNotRepeated() {
        IOException refused = new IOException("Connection refused");
        assertEquals("java.io.IOException: Connection refused", WardenMain.describe(new RuntimeException(refused)));
        assertEquals("Cannot create /data: no space", WardenMain.describe(new IllegalStateException("Cannot create /data: no space")));
    }
}
