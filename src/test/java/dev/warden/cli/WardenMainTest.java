package dev.warden.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import org.junit.jupiter.api.Test;

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

    @Test
    void aCauseTheMessageAlreadyNamesIsNotRepeated() {
        IOException refused = new IOException("Connection refused");
        assertEquals("java.io.IOException: Connection refused", WardenMain.describe(new RuntimeException(refused)));
        assertEquals("Cannot create /data: no space", WardenMain.describe(new IllegalStateException("Cannot create /data: no space")));
    }
}
