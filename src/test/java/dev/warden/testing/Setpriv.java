package dev.warden.testing;

import java.util.List;

/** util-linux setpriv: run a command as another user and group, with no supplementary groups (needs root). */
public final class Setpriv {

    private Setpriv() {
    }

    /** The command prefix that runs what follows it as {@code uid}:{@code gid}. */
    public static List<String> as(int uid, int gid) {
        return List.of("setpriv", "--reuid=" + uid, "--regid=" + gid, "--clear-groups", "--");
    }
}
