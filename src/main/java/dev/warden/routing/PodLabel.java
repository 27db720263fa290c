package dev.warden.routing;

/** One label of this pod, set in the API server: where role routing's Service looks. */
public interface PodLabel {

    /** The pod's name, for messages. */
    String pod();

    /**
     * Sets the label to {@code value}, answered by the API server.
     *
     * @throws Exception the API server did not take it; the message says why and what to do
     */
    void set(String value) throws Exception;
}
