package dev.warden.routing;

import java.util.Set;

/** The Endpoints of the Service that clients use, which warden writes: read, and written over as read. */
public interface ServiceEndpoints {

    /** The Endpoints as read: the addresses it routes to, and the version a write goes over. */
    record Routed(Set<String> addresses, Object version) {
    }

    /** A write refused because the Endpoints changed since it was read: read it again. */
    final class Changed extends Exception {
        public Changed(String message) {
            super(message);
        }
    }

    /** {@code namespace/name}, for messages. */
    String describe();

    /** This pod's address, which a serving warden writes. */
    String own();

    /**
     * Whether {@code read} routes to this pod exactly as this warden writes it (its address alone, with its ports, its
     * pod as the target): ports or a target changed by another writer are written again.
     */
    boolean asWritten(Routed read);

    /**
     * The Endpoints now.
     *
     * @throws Exception the API server did not answer it: the message says why and what to do
     */
    Routed read() throws Exception;

    /**
     * Writes {@code addresses} (this pod's, or those of {@code read} but this pod's) over the Endpoints as {@code read}:
     * refused where it changed since, so that nothing another warden wrote meanwhile is lost.
     *
     * @throws Changed it changed since {@code read}
     * @throws Exception the API server did not take it: the message says why and what to do
     */
    Routed write(Routed read, Set<String> addresses) throws Exception;
}
