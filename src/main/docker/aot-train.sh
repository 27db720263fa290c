#!/bin/bash
# Trains the JDK's AOT cache (JEP 483/514) for the image at build time: starts `warden serve` with the
# image's own JVM and JAVA_OPTS (the cache is only used by a JVM started with the same flags, JVM build
# and class path), waits until it is ready, asks each probe and the metrics a few times, lets the reaper
# pass, then sends SIGTERM: the JVM writes the cache as it exits. bash for HTTP over /dev/tcp (no curl).
# usage: aot-train.sh OUTPUT.aot   (in the directory of quarkus-run.jar)
set -euo pipefail
out=$1
work=$(mktemp -d)
api=19095 management=19096
get() {
  exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'GET %s HTTP/1.0\r\n\r\n' "$2" >&3 && head -1 <&3
  exec 3<&- 3>&-
}
# Classes only, no method profiles (-AOTRecordTraining): the image's JVM runs C1 alone, which never
# reads them, and they cost about 3 MB of resident memory (docs/BENCHMARKS.md).
# shellcheck disable=SC2086 # JAVA_OPTS is a list of flags
XDG_STATE_HOME=$work/state java $JAVA_OPTS -XX:AOTCacheOutput="$out" -XX:+UnlockDiagnosticVMOptions -XX:-AOTRecordTraining \
  -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port=$api -Dquarkus.management.host=127.0.0.1 \
  -Dquarkus.management.port=$management -jar quarkus-run.jar serve --data-root "$work/data" --engine-dir "$work/engine" &
pid=$!
ready=
for _ in $(seq 1 600); do
  case "$(get $management /q/health/ready 2>/dev/null || true)" in *" 200 "*) ready=1; break ;; esac
  kill -0 $pid 2>/dev/null || break
  sleep 0.1
done
if [ -z "$ready" ]; then
  echo "aot-train.sh: warden never answered ready; no cache trained" >&2
  kill -KILL $pid 2>/dev/null || true
  exit 1
fi
for _ in $(seq 1 20); do
  for path in /q/health/ready /q/health/live /q/health/started /q/health /q/metrics; do get $management $path >/dev/null; done
  get $api /api/v1/status >/dev/null
done
sleep 3
kill -TERM $pid
wait $pid || true
rm -rf "$work"
test -s "$out"
