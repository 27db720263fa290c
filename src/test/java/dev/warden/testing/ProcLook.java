package dev.warden.testing;

import java.util.List;

/**
 * What another container of a pod reads of a process it sees in the pod's one PID namespace: an sh
 * script, run as that container's process, that prints one line a finding: {@code read <secret>} for
 * each of {@code api-token}, {@code engine-key} and {@code token} read through {@code /proc/<pid>/root},
 * {@code read environ} when the environment holds the canary, {@code read fd} when the descriptor table
 * lists, {@code attached} when jcmd printed the JVM's properties, and {@code sees the process} when
 * {@code /proc/<pid>/status} shows the UID (which every process may read).
 */
public final class ProcLook {

    private static final String SCRIPT = """
            p=$1; s=$2; jcmd=$3; canary=$4; uid=$5
            for f in api-token engine-key token; do
              cat "/proc/$p/root$s/$f" 2>/dev/null | grep -q never-seen && echo "read $f"
            done
            tr '\\0' '\\n' 2>/dev/null < "/proc/$p/environ" | grep -q "$canary" && echo "read environ"
            ls "/proc/$p/fd" >/dev/null 2>&1 && echo "read fd"
            timeout 30 "$jcmd" -J-Dsun.tools.attach.attachTimeout=3000 "$p" VM.system_properties 2>&1 | grep -q '^java.version=' \\
              && echo attached
            grep -q "^Uid:[[:space:]]*$uid[[:space:]]" "/proc/$p/status" && echo "sees the process"
            """;

    /** What a look at a process closed to it prints: it is there, and nothing more. */
    public static final String NOTHING_BUT_THE_PROCESS = "sees the process\n";

    private ProcLook() {
    }

    /**
     * {@code sh -c SCRIPT look ...}: the look at {@code pid} (a shell word: {@code "$p"} works), whose
     * Secrets are files under {@code secrets} holding "never-seen", whose environment holds {@code canary},
     * running as {@code uid}.
     */
    public static List<String> command(String pid, String secrets, String jcmd, String canary, int uid) {
        return List.of("sh", "-c", SCRIPT, "look", pid, secrets, jcmd, canary, Integer.toString(uid));
    }

    /** The script alone, for a shell line that finds the pid first. */
    public static String script() {
        return SCRIPT;
    }
}
