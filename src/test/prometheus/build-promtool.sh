#!/usr/bin/env bash
# Builds promtool (Prometheus 3.16.0: module github.com/prometheus/prometheus v0.316.0) from the Go module proxy into
# DIR (default target/tools), and copies prometheus-operator's PodMonitor and PrometheusRule CRDs (its module v0.94.0,
# example/prometheus-operator-crd) into DIR/monitoring-crds: what AlertRulesInteropIT and ApiServerInteropIT use.
# Cold about 2 minutes on 2 cores; Go's caches keep the rest.
# usage: build-promtool.sh [DIR]
set -euo pipefail
out=$(mkdir -p "${1:-target/tools}" && cd "${1:-target/tools}" && pwd)
prometheus=v0.316.0 operator=v0.94.0
export GOFLAGS=-buildvcs=false CGO_ENABLED=0
# remove_all_sd: none of Prometheus's service discovery plugins (the cloud SDKs), which promtool's rule commands never
# use; the tag Prometheus's own build offers for this.
GOBIN="$out" go install -trimpath -tags remove_all_sd -ldflags "-s -w -X github.com/prometheus/common/version.Version=3.16.0" \
  github.com/prometheus/prometheus/cmd/promtool@$prometheus
module=$(go mod download -json github.com/prometheus-operator/prometheus-operator@$operator | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
rm -rf "$out/monitoring-crds" && mkdir -p "$out/monitoring-crds"
cp "$module"/example/prometheus-operator-crd/monitoring.coreos.com_{podmonitors,prometheusrules}.yaml "$out/monitoring-crds/"
"$out/promtool" --version | sed -n 1p
