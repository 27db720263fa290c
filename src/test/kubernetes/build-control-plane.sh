#!/usr/bin/env bash
# Builds a real Kubernetes control plane from the Go module proxy alone: kube-apiserver and
# kube-controller-manager v1.37.2 and etcd v3.7.3, into DIR (default target/tools). Go's own caches
# keep what it fetched and compiled (cold: about 7 minutes on 2 cores; warm: seconds).
# `go install k8s.io/kubernetes/cmd/kube-apiserver@v1.37.2` refuses: k8s.io/kubernetes replaces its
# k8s.io/* modules with ./staging. A wrapper module requires it and replaces each with its published
# v0.37.2 release instead; etcd's server module has the same kind of replace lines.
# CGO off, as in both projects' release builds, and as build-node.sh builds the kubelet: one cgo setting
# means `net` and everything above it compile once for all eight commands, not twice.
# usage: build-control-plane.sh [DIR]
set -euo pipefail
out=$(mkdir -p "${1:-target/tools}" && cd "${1:-target/tools}" && pwd)
work=$(mkdir -p target/control-plane-build && cd target/control-plane-build && pwd)
k8s=v1.37.2 staging=v0.37.2 etcd=v3.7.3
export GOFLAGS=-buildvcs=false CGO_ENABLED=0

mkdir -p "$work/kubernetes" "$work/etcd"
cd "$work/kubernetes"
if ! grep -qs '^tool' go.mod; then
  go mod download k8s.io/kubernetes@$k8s
  mod=$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$k8s.mod
  { printf 'module local/controlplane\n\ngo 1.26.0\n\ngodebug default=go1.26\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' $k8s
    sed -n '/^replace (/,/^)/p' "$mod" | awk -v v=$staging '/=>/{print "\t"$1" => "$1" "v}'
    printf ')\n'; } > go.mod
  go get -tool k8s.io/kubernetes/cmd/kube-apiserver@$k8s k8s.io/kubernetes/cmd/kube-controller-manager@$k8s
fi
version=k8s.io/component-base/version client=k8s.io/client-go/pkg/version
ldflags="-s -w -X $version.gitVersion=$k8s -X $version.gitMajor=1 -X $version.gitMinor=37 -X $client.gitVersion=$k8s -X $client.gitMajor=1 -X $client.gitMinor=37"
go build -trimpath -ldflags "$ldflags" -o "$out/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager

cd "$work/etcd"
grep -qs '^tool' go.mod || { printf 'module local/etcd\n\ngo 1.26.0\n' > go.mod; go get -tool go.etcd.io/etcd/server/v3@$etcd; }
go build -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3
"$out/kube-apiserver" --version
# The first line only; sed reads the rest, so etcd never meets a closed pipe (SIGPIPE under pipefail).
"$out/etcd" --version | sed -n 1p
