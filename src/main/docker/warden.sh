#!/bin/sh
# `warden` in the JVM image: the image's JVM with its flags (JAVA_OPTS, then the pod's JAVA_OPTS_APPEND) and its
# AOT cache, for every command, so `kubectl exec <pod> -c warden -- warden status` works as the native image's does.
# shellcheck disable=SC2086 # JAVA_OPTS and JAVA_OPTS_APPEND are lists of flags
exec java $JAVA_OPTS -XX:AOTCache=/deployments/app.aot $JAVA_OPTS_APPEND -jar /deployments/quarkus-run.jar "$@"
