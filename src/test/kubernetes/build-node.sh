#!/usr/bin/env bash
# Builds what a real Kubernetes node needs beside the control plane of build-control-plane.sh (which it
# runs first), into DIR (default target/tools), from the Go module proxy alone:
#   kube-scheduler, kubelet and kube-proxy v1.37.2 (the control plane's wrapper module, one more `go get -tool`),
#   containerd, ctr and containerd-shim-runc-v2 v2.4.2 (no btrfs, devmapper or zfs snapshotter).
# runc, the CNI plugins and catatonit (the pause image) come from Debian (node-up.sh names them).
# Go's own caches keep what it fetched and compiled: cold about 5.5 minutes more than the control plane.
# usage: build-node.sh [DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/build-control-plane.sh" "${1:-target/tools}"
out=$(cd "${1:-target/tools}" && pwd)
work=$(cd target/control-plane-build && pwd)
k8s=v1.37.2 containerd=v2.4.2
export GOFLAGS=-buildvcs=false CGO_ENABLED=0

cd "$work/kubernetes"
grep -qs 'cmd/kube-proxy$' go.mod || go get -tool k8s.io/kubernetes/cmd/kubelet@$k8s k8s.io/kubernetes/cmd/kube-scheduler@$k8s \
  k8s.io/kubernetes/cmd/kube-proxy@$k8s
version=k8s.io/component-base/version client=k8s.io/client-go/pkg/version
ldflags="-s -w -X $version.gitVersion=$k8s -X $version.gitMajor=1 -X $version.gitMinor=37 -X $client.gitVersion=$k8s -X $client.gitMajor=1 -X $client.gitMinor=37"
go build -trimpath -ldflags "$ldflags" -o "$out/" k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet \
  k8s.io/kubernetes/cmd/kube-proxy

mkdir -p "$work/containerd" && cd "$work/containerd"
module=github.com/containerd/containerd/v2
grep -qs '^tool' go.mod || { printf 'module local/containerd\n\ngo 1.26.0\n' > go.mod
  go get -tool $module/cmd/containerd@$containerd $module/cmd/ctr@$containerd $module/cmd/containerd-shim-runc-v2@$containerd; }
ldflags="-s -w -X $module/version.Version=$containerd -X $module/version.Package=$module"
go build -trimpath -tags "no_btrfs no_devmapper no_zfs urfave_cli_no_docs" -ldflags "$ldflags" -o "$out/" \
  $module/cmd/containerd $module/cmd/ctr $module/cmd/containerd-shim-runc-v2
"$out/kubelet" --version
"$out/containerd" --version
