#!/usr/bin/env bash
# A real Kubernetes v1.37.2 cluster on this machine, every part a plain process: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, and per node a containerd v2 (runc, the CNI bridge) and a kubelet.
# Binaries from build-node.sh; runc, the CNI plugins and catatonit from Debian. node-down.sh stops it all.
#
# usage: node-up.sh STATE TOOLS [IMAGES]
#   STATE   a directory of its own: PKI, etcd, logs, pids, each node's containerd and kubelet, and
#           STATE/shared, the directory hostPath volumes for the tests live under
#   TOOLS   the binaries (target/tools)
#   IMAGES  image tarballs (podman save) imported into every node's containerd; pause.tar is the sandbox
#           image (node-images.sh makes it)
#   NODES=2     a second node, warden-node2 (kubelet and containerd of its own, pods on 10.244.2.0/24)
#   ISOLATE=1   node 2 in a mount namespace of its own where STATE/shared is STATE/node2/shared: its pods
#               see other files there than node 1's (as on two machines), so file locks never meet
# Addresses: etcd on 127.0.0.1; the API server and the kubelets on 10.245.0.N, added to lo (a node's IP may not
# be loopback); pods on a bridge per node, 10.244.N.0/24; Services on 10.96.0.0/24, routed by one kube-proxy
# (iptables, every Service connection masqueraded, as the nodes share this machine's network). No DNS: a pod
# finds a Service by the environment variables the kubelet gives it.
# Two settings this kind of machine needs (no CAP_SYS_RESOURCE, hybrid cgroups): containerd's
# restrict_oom_score_adj and the kubelet's failCgroupV1: false with the cgroupfs driver.
# Fails (exit 1, the last lines of the log that explain it) when a part never becomes ready.
set -euo pipefail
state=$(mkdir -p "${1:?usage: node-up.sh STATE TOOLS [IMAGES]}" && cd "$1" && pwd)
tools=$(cd "${2:?usage: node-up.sh STATE TOOLS [IMAGES]}" && pwd)
images=${3:-}
nodes=${NODES:-1}
export PATH=$tools:/usr/sbin:/usr/bin:/sbin:/bin
pki=$state/pki log=$state/log
api_ip=10.245.0.1 api_port=6443 etcd_port=23790 etcd_peer=23800
mkdir -p "$pki" "$log" "$state/shared"; chmod 700 "$state" "$pki"
ln -sfn "$tools" "$state/tools"   # for node-down.sh's ctr
for tool in etcd kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet containerd ctr containerd-shim-runc-v2; do
  [ -x "$tools/$tool" ] || { echo "node-up.sh: no $tool in $tools: run src/test/kubernetes/build-node.sh $tools" >&2; exit 1; }
done
for need in runc:runc /usr/lib/cni/bridge:containernetworking-plugins kubectl:kubectl openssl:openssl iptables:iptables; do
  command -v "${need%%:*}" >/dev/null || { echo "node-up.sh: ${need%%:*} is missing (Debian package ${need#*:})" >&2; exit 1; }
done
started=$(date +%s.%N)
say() { printf '%s [node-up] %s\n' "$(date +%T)" "$*"; }
start() { # name command...: the pid in STATE/NAME.pid, output in STATE/log/NAME.log
  local name=$1; shift
  if [ -f "$state/$name.pid" ] && kill -0 "$(cat "$state/$name.pid")" 2>/dev/null; then say "$name already running"; return; fi
  "$@" > "$log/$name.log" 2>&1 &
  echo $! > "$state/$name.pid"
}
wait_for() { # what seconds log command...
  local what=$1 seconds=$2 logname=$3 i; shift 3
  for i in $(seq 1 $((seconds * 5))); do
    if "$@" >/dev/null 2>&1; then say "$what"; return 0; fi
    sleep 0.2
  done
  echo "node-up.sh: $what: not within ${seconds} s; the end of $log/$logname.log:" >&2
  tail -15 "$log/$logname.log" >&2
  exit 1
}

# What the kubelet and the bridge plugin change on the machine, for node-down.sh to put back.
[ -f "$state/sysctl.orig" ] || for key in vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops \
    kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward net.ipv4.conf.all.route_localnet; do
  echo "$key=$(sysctl -n $key)"; done > "$state/sysctl.orig"
for n in $(seq 1 "$nodes"); do
  ip -4 addr show dev lo | grep -q "10.245.0.$n/" || ip addr add "10.245.0.$n/32" dev lo
done

if [ ! -f "$pki/ca.crt" ]; then
  ( cd "$pki"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=warden-node-ca 2>/dev/null
    cert() { # name subject extensions
      openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
      printf '%s\n' "$3" > "$1.ext"
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -out "$1.crt" -extfile "$1.ext" 2>/dev/null
      rm -f "$1.csr" "$1.ext"; }
    cert apiserver /CN=kube-apiserver "subjectAltName=IP:$api_ip,IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes.default.svc
extendedKeyUsage=serverAuth"
    cert admin "/O=system:masters/CN=warden-test-admin" "extendedKeyUsage=clientAuth"
    cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "extendedKeyUsage=clientAuth"
    cert kcm "/CN=system:kube-controller-manager" "extendedKeyUsage=clientAuth"
    cert scheduler "/CN=system:kube-scheduler" "extendedKeyUsage=clientAuth"
    cert kube-proxy "/CN=system:kube-proxy" "extendedKeyUsage=clientAuth"
    for n in 1 2; do
      node=warden-node; [ $n = 1 ] || node=warden-node$n
      cert "kubelet$n" "/O=system:nodes/CN=system:node:$node" "extendedKeyUsage=clientAuth"
      cert "kubelet$n-serving" "/CN=$node" "subjectAltName=IP:10.245.0.$n,DNS:$node
extendedKeyUsage=serverAuth"
    done
    openssl genrsa -out sa.key 2048 2>/dev/null && openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null )
  kubeconfig() { # file user cert
    local file=$pki/$1.kubeconfig
    kubectl config set-cluster test --server="https://$api_ip:$api_port" --certificate-authority="$pki/ca.crt" --embed-certs --kubeconfig="$file" >/dev/null
    kubectl config set-credentials "$2" --client-certificate="$pki/$3.crt" --client-key="$pki/$3.key" --embed-certs --kubeconfig="$file" >/dev/null
    kubectl config set-context test --cluster=test --user="$2" --kubeconfig="$file" >/dev/null
    kubectl config use-context test --kubeconfig="$file" >/dev/null; }
  kubeconfig admin admin admin; kubeconfig kcm kcm kcm; kubeconfig scheduler scheduler scheduler
  kubeconfig kube-proxy kube-proxy kube-proxy
  kubeconfig kubelet1 system:node:warden-node kubelet1; kubeconfig kubelet2 system:node:warden-node2 kubelet2
fi

start etcd etcd --name node --data-dir "$state/etcd" \
  --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
  --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
  --initial-cluster "node=http://127.0.0.1:$etcd_peer" --initial-cluster-state new --listen-metrics-urls ""
wait_for "etcd is healthy" 60 etcd curl -sf "http://127.0.0.1:$etcd_port/health"
start apiserver kube-apiserver --etcd-servers="http://127.0.0.1:$etcd_port" \
  --bind-address=$api_ip --advertise-address=$api_ip --secure-port=$api_port \
  --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" --client-ca-file="$pki/ca.crt" \
  --kubelet-client-certificate="$pki/apiserver-kubelet-client.crt" --kubelet-client-key="$pki/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority="$pki/ca.crt" --kubelet-preferred-address-types=InternalIP \
  --service-account-issuer=https://kubernetes.default.svc --api-audiences=https://kubernetes.default.svc \
  --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
  --service-cluster-ip-range=10.96.0.0/24 --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
  --allow-privileged=false --profiling=false --cert-dir="$state/apiserver-certs"
wait_for "kube-apiserver is ready" 180 apiserver curl -sf --cacert "$pki/ca.crt" "https://$api_ip:$api_port/readyz"
start kcm kube-controller-manager --kubeconfig="$pki/kcm.kubeconfig" \
  --authentication-kubeconfig="$pki/kcm.kubeconfig" --authorization-kubeconfig="$pki/kcm.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port=10257 --cert-dir="$state/kcm-certs" --leader-elect=false \
  --service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" --use-service-account-credentials=true \
  --cluster-signing-cert-file="$pki/ca.crt" --cluster-signing-key-file="$pki/ca.key" --controllers='*'
start scheduler kube-scheduler --kubeconfig="$pki/scheduler.kubeconfig" \
  --authentication-kubeconfig="$pki/scheduler.kubeconfig" --authorization-kubeconfig="$pki/scheduler.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port=10259 --leader-elect=false
wait_for "kube-controller-manager is healthy" 120 kcm curl -skf https://127.0.0.1:10257/healthz
wait_for "kube-scheduler is ready" 120 scheduler curl -skf https://127.0.0.1:10259/readyz

runtime_up() { # N: node N's CNI config and containerd
  local n=$1 node=warden-node; [ "$n" = 1 ] || node=warden-node$n
  local dir=$state/node$n
  local runtime=$dir/containerd kubelet_dir=$dir/kubelet
  mkdir -p "$dir/cni-conf" "$runtime/run" "$kubelet_dir" "$dir/pod-logs" "$dir/volume-plugins"
  # A bridge on a subnet that exists only here, no masquerade (pods reach nothing outside this machine).
  cat > "$dir/cni-conf/10-warden.conflist" <<EOF
{ "cniVersion": "1.0.0", "name": "warden$n",
  "plugins": [
    { "type": "bridge", "bridge": "wcni$n", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": { "type": "host-local", "dataDir": "$dir/cni-ipam", "ranges": [[{"subnet": "10.244.$n.0/24", "gateway": "10.244.$n.1"}]],
                "routes": [{"dst": "0.0.0.0/0"}] } },
    { "type": "portmap", "capabilities": {"portMappings": true} } ] }
EOF
  cat > "$dir/containerd.toml" <<EOF
version = 3
root = "$runtime/root"
state = "$runtime/state"
[grpc]
  address = "$runtime/run/containerd.sock"
[ttrpc]
  address = "$runtime/run/containerd.sock.ttrpc"
[metrics]
  address = ""
[plugins]
  [plugins.'io.containerd.grpc.v1.cri']
    disable_tcp_service = true
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = "overlayfs"
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = "localhost/pause:catatonit"
  [plugins.'io.containerd.cri.v1.runtime']
    enable_selinux = false
    netns_mounts_under_state_dir = true
    # Without CAP_SYS_RESOURCE runc cannot lower oom_score_adj (the kubelet asks -998 for a sandbox) and
    # every pod fails with "can't get final child's PID from pipe: EOF": clamp it, as rootless setups do.
    restrict_oom_score_adj = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = "runc"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = "$(command -v runc)"
          SystemdCgroup = false
          Root = "$runtime/runc"
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ["/usr/lib/cni"]
      conf_dir = "$dir/cni-conf"
      max_conf_num = 1
  [plugins.'io.containerd.nri.v1.nri']
    disable = true
  [plugins.'io.containerd.internal.v1.opt']
    path = "$runtime/opt"
EOF
  # Node 1 under the default cgroup root; node 2 under one of its own, which must exist in every hierarchy.
  local cgroup_root=/
  if [ "$n" != 1 ]; then
    cgroup_root=/warden-node$n
    for h in /sys/fs/cgroup/*/; do mkdir -p "$h${cgroup_root#/}"; done
    if [ -d /sys/fs/cgroup/cpuset ]; then
      cat /sys/fs/cgroup/cpuset/cpuset.cpus > "/sys/fs/cgroup/cpuset$cgroup_root/cpuset.cpus"
      cat /sys/fs/cgroup/cpuset/cpuset.mems > "/sys/fs/cgroup/cpuset$cgroup_root/cpuset.mems"
    fi
  fi
  local enter=()
  if [ "$n" != 1 ] && [ "${ISOLATE:-0}" = 1 ]; then
    mkdir -p "$dir/ns" "$dir/shared"
    if ! mountpoint -q "$dir/ns"; then mount --bind "$dir/ns" "$dir/ns"; mount --make-private "$dir/ns"; fi
    if [ ! -s "$dir/ns/mnt" ] || ! nsenter --mount="$dir/ns/mnt" true 2>/dev/null; then
      touch "$dir/ns/mnt"
      unshare --mount="$dir/ns/mnt" --propagation private mount --bind "$dir/shared" "$state/shared"
    fi
    enter=(nsenter --mount="$dir/ns/mnt" --)
    say "$node: a mount namespace of its own, where $state/shared is $dir/shared"
  fi
  start "containerd$n" "${enter[@]}" containerd --config "$dir/containerd.toml"
  wait_for "containerd of $node answers" 60 "containerd$n" ctr --address "$runtime/run/containerd.sock" version
}

images_in() { # N: every tarball in IMAGES into node N's containerd, the pause image first
  local n=$1 tarball out
  for tarball in "$images"/pause.tar "$images"/*.tar; do
    [ -f "$tarball" ] || continue
    out=$(ctr --address "$state/node$n/containerd/run/containerd.sock" -n k8s.io images import "$tarball" 2>&1) \
      || { echo "node-up.sh: ctr could not import $tarball into node $n: $out" >&2; return 1; }
  done
}

kubelet_up() { # N
  local n=$1 node=warden-node; [ "$n" = 1 ] || node=warden-node$n
  local dir=$state/node$n
  local runtime=$dir/containerd kubelet_dir=$dir/kubelet cgroup_root=/ enter=()
  [ "$n" = 1 ] || cgroup_root=/warden-node$n
  [ "$n" != 1 ] && [ "${ISOLATE:-0}" = 1 ] && enter=(nsenter --mount="$dir/ns/mnt" --)
  cat > "$dir/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 10.245.0.$n
port: $((10250 + (n - 1) * 10))
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $((10248 + (n - 1) * 10))
tlsCertFile: $pki/kubelet$n-serving.crt
tlsPrivateKeyFile: $pki/kubelet$n-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$runtime/run/containerd.sock
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
cgroupsPerQOS: true
enforceNodeAllocatable: [pods]
cgroupRoot: $cgroup_root
resolvConf: ""
clusterDomain: cluster.local
podLogsDir: $dir/pod-logs
volumePluginDir: $dir/volume-plugins
maxPods: 30
oomScoreAdj: 0
maxOpenFiles: 20000
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 200Mi, nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
evictionPressureTransitionPeriod: 30s
rotateCertificates: false
serverTLSBootstrap: false
shutdownGracePeriod: 0s
nodeStatusReportFrequency: 10s
syncFrequency: 10s
fileCheckFrequency: 10s
EOF
  start "kubelet$n" "${enter[@]}" kubelet --config="$dir/kubelet.yaml" --kubeconfig="$pki/kubelet$n.kubeconfig" \
    --hostname-override="$node" --node-ip="10.245.0.$n" --root-dir="$kubelet_dir" --cert-dir="$kubelet_dir/pki" -v=2
  wait_for "kubelet of $node is healthy" 120 "kubelet$n" curl -sf "http://127.0.0.1:$((10248 + (n - 1) * 10))/healthz"
  wait_for "$node is Ready" 240 "kubelet$n" sh -c "kubectl --kubeconfig='$pki/admin.kubeconfig' get node $node \
    -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
}
for n in $(seq 1 "$nodes"); do runtime_up "$n"; done
if [ -n "$images" ]; then
  # Every node's images at once: the import is most of a node's start.
  importers=()
  for n in $(seq 1 "$nodes"); do images_in "$n" & importers+=($!); done
  for importer in "${importers[@]}"; do wait "$importer" || exit 1; done
  say "images imported from $images"
fi
for n in $(seq 1 "$nodes"); do kubelet_up "$n"; done
# After the nodes: kube-proxy exits when its Node's addresses change, as they do when the Node first registers.
start kube-proxy kube-proxy --kubeconfig="$pki/kube-proxy.kubeconfig" --proxy-mode=iptables --masquerade-all \
  --cluster-cidr=10.244.0.0/16 --hostname-override=warden-node --bind-address=127.0.0.1 \
  --healthz-bind-address=127.0.0.1:10256 --metrics-bind-address=127.0.0.1:10249 --conntrack-max-per-core=0
wait_for "kube-proxy is healthy" 60 kube-proxy curl -sf http://127.0.0.1:10256/healthz
say "$nodes node(s) Ready after $(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s; kubeconfig $pki/admin.kubeconfig"
