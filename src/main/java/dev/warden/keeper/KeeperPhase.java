package dev.warden.keeper;

/** Where a keeper (of the server locks, or of the gate) is in its life: what the probes read before anything else. */
public enum KeeperPhase {
    NOT_STARTED, RUNNING, STOPPED
}
