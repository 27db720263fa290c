package dev.warden.cli;

/** What warden's exit codes mean; {@code --help} lists them too. */
public final class ExitCodes {
    public static final int OK = 0;
    /** Something went wrong that is not a usage error or a refused lock; the message says what. */
    public static final int ERROR = 1;
    /** The command line was wrong. */
    public static final int USAGE = 2;
    /** Another process holds a lock warden would not wait for: lilbee's own refusal code. */
    public static final int LOCK_REFUSED = 3;

    private ExitCodes() {
    }
}
