package dev.warden.hold;

import java.nio.file.Path;

/** Why {@code serve --no-wait} gave up: which lock another process holds, and who that is. */
public record Refusal(LockKind kind, Path path, LockState.HeldElsewhere holder) {

    /** lilbee's own exit code when another server holds its lock. */
    public static final int EXIT_CODE = 3;

    public String message() {
        String who = holder.holderPid().isPresent() ? "process " + holder.holderPid().getAsLong() : "another process";
        if (kind == LockKind.SCOPE) {
            String owner = holder.owner().known() ? holder.owner().describe() : who;
            return "The scope " + path.getParent() + " is already served by " + owner + " (it holds " + path
                    + "). Stop that server, or give this one another scope.";
        }
        return "Another server already holds " + path + " (" + who + "). Stop it first, or serve another data dir.";
    }
}
