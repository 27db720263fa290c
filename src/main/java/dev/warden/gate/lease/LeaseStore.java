package dev.warden.gate.lease;

import java.io.IOException;
import java.util.Optional;

/** Where the Lease is kept: the API server ({@link ApiLeases}), or memory in the tests. */
public interface LeaseStore extends AutoCloseable {

    /** The Lease as read, with what a write of it must name (its resourceVersion), so that a write races no other. */
    record Stored(LeaseRecord record, Object version) {
    }

    /**
     * The API server refused the Lease to be {@code what} ("read", "created", "written"): {@code status} 403 (forbidden),
     * 409 (changed since read), and so on.
     */
    final class Refused extends Exception {
        private final int status;
        private final String what;

        public Refused(int status, String what, String message) {
            super(message);
            this.status = status;
            this.what = what;
        }

        public int status() {
            return status;
        }

        public String what() {
            return what;
        }
    }

    /** The Lease; empty: it does not exist. */
    Optional<Stored> get() throws IOException, InterruptedException, Refused;

    Stored create(LeaseRecord record) throws IOException, InterruptedException, Refused;

    /** {@code record} written over {@code read}: refused (409) when the Lease changed since. */
    Stored update(Stored read, LeaseRecord record) throws IOException, InterruptedException, Refused;

    /** Where it is, for messages: {@code namespace/name}. */
    String describe();

    @Override
    void close();
}
