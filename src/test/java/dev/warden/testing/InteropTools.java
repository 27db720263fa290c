package dev.warden.testing;

import org.junit.jupiter.api.Assumptions;

/** The peers .ci/run builds (helm, kubecheck, the control plane), named by {@code -Dinterop.NAME=<path>}. */
public final class InteropTools {

    private InteropTools() {
    }

    /** The path given for {@code name}; stops the calling test, saying why, where none was given. */
    public static String path(String name) {
        String path = System.getProperty("warden.interop." + name, "");
        if (path.isEmpty()) {
            String why = "no " + name + ": run with -Pinterop -Dinterop." + name + "=<path>, as .ci/run does";
            System.err.println("SKIPPED: " + why);
            Assumptions.abort(why);
        }
        return path;
    }
}
