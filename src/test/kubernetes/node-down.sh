#!/usr/bin/env bash
# Stops what node-up.sh started, each by the pid it recorded, in reverse order: every pod's containers
# first (so no process of a test outlives the cluster), the kubelets, the containerds and the shims they
# left, then the control plane; unmounts what is left under STATE, removes the bridges, the lo addresses,
# the portmap plugin's iptables chains and the kubelets' cgroups, and puts back the sysctls the kubelet
# and the bridge plugin changed.
# usage: node-down.sh STATE [--purge]   (--purge also removes STATE)
set -uo pipefail
state=$(cd "${1:?usage: node-down.sh STATE [--purge]}" 2>/dev/null && pwd) || { echo "node-down.sh: no $1: nothing to stop"; exit 0; }
say() { printf '%s [node-down] %s\n' "$(date +%T)" "$*"; }
stop_pid() { # name [seconds]
  local file=$state/$1.pid pid i
  [ -f "$file" ] || return 0
  pid=$(cat "$file")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for i in $(seq 1 $((${2:-20} * 10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then say "$1 ($pid) still up after ${2:-20} s: SIGKILL"; kill -9 "$pid"; fi
    say "stopped $1 ($pid)"
  fi
  rm -f "$file"
}
# node-up.sh links STATE/tools to the binaries it ran.
ctr=$state/tools/ctr
[ -x "$ctr" ] || ctr=$(command -v ctr || true)

for dir in "$state"/node*; do
  [ -d "$dir" ] || continue
  n=${dir##*/node}
  stop_pid "kubelet$n"
  socket=$dir/containerd/run/containerd.sock
  if [ -S "$socket" ] && [ -n "$ctr" ] && [ -f "$state/containerd$n.pid" ]; then
    for task in $("$ctr" --address "$socket" -n k8s.io tasks ls -q 2>/dev/null); do
      "$ctr" --address "$socket" -n k8s.io tasks kill -s SIGKILL "$task" 2>/dev/null
    done
  fi
  stop_pid "containerd$n"
  # The shims outlive containerd: ours are the ones given this node's socket.
  for pid in $(ps -eo pid=,args= | awk -v s="$socket" '/containerd-shim-runc-v2/ && index($0, s) {print $1}'); do
    kill -9 "$pid" 2>/dev/null && say "stopped shim $pid"
  done
done
# A container whose shim went before it (the test stopped mid-way) lives on in its pod's cgroup: every process
# still in the kubelets' cgroups is a pod's.
for top in kubepods warden-node2; do
  for procs in $(find /sys/fs/cgroup/*/"$top" /sys/fs/cgroup/"$top" -name cgroup.procs 2>/dev/null); do
    for pid in $(cat "$procs" 2>/dev/null); do kill -9 "$pid" 2>/dev/null && say "stopped pod process $pid"; done
  done
done
stop_pid kube-proxy
[ -x "$state/tools/kube-proxy" ] && "$state/tools/kube-proxy" --cleanup >/dev/null 2>&1 && say "kube-proxy's iptables rules removed"
for name in scheduler kcm apiserver etcd; do stop_pid "$name"; done
for ns in "$state"/node*/ns; do
  [ -d "$ns" ] || continue
  umount "$ns/mnt" 2>/dev/null; umount "$ns" 2>/dev/null && say "released the mount namespace $ns/mnt"
done
sleep 1
# Mounts left under STATE (root filesystems, volumes, network namespaces), deepest first.
for mount in $(awk -v s="$state/" 'index($5, s) == 1 {print $5}' /proc/self/mountinfo | sort -r); do
  umount -l "$mount" && say "unmounted $mount"
done
for bridge in wcni1 wcni2; do ip link show "$bridge" >/dev/null 2>&1 && ip link del "$bridge" && say "deleted the bridge $bridge"; done
for address in $(ip -4 -o addr show dev lo | awk '{print $4}' | grep '^10\.245\.0\.'); do
  ip addr del "$address" dev lo && say "removed $address from lo"
done
# The portmap plugin's iptables chains (CNI-*) and any kube-proxy left: the rules that jump to them, then the chains.
for ipt in iptables ip6tables; do
  command -v $ipt >/dev/null || continue
  for table in nat filter mangle; do
    chains=$($ipt -t $table -S 2>/dev/null | awk '/^-N (CNI-|KUBE-)/{print $2}')
    for chain in $chains; do
      for parent in $($ipt -t $table -S | awk -v c="$chain" '$1=="-A" {for (i=1;i<=NF;i++) if ($i=="-j" && $(i+1)==c) print $2}' | sort -u); do
        while rule=$($ipt -t $table -S "$parent" | grep -m1 -E -- "-j $chain( |\$)"); do
          eval "$ipt -t $table ${rule/-A/-D}" || break
        done
      done
    done
    for chain in $chains; do $ipt -t $table -F "$chain"; done
    for chain in $chains; do $ipt -t $table -X "$chain"; done
  done
done
# The kubelets' cgroups (kubepods for node 1, warden-node2 for node 2), deepest first.
for hierarchy in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
  for top in kubepods warden-node2; do
    [ -d "$hierarchy$top" ] && find "$hierarchy$top" -depth -type d -exec rmdir {} \; 2>/dev/null
    [ -d "$hierarchy$top" ] && say "could not remove $hierarchy$top"
  done
done
if [ -f "$state/sysctl.orig" ]; then
  sysctl -q -p "$state/sysctl.orig" && say "sysctls put back: $(paste -sd' ' "$state/sysctl.orig")"
  rm -f "$state/sysctl.orig"
fi
if [ "${2:-}" = --purge ]; then rm -rf "$state" && say "removed $state"; fi
say "done"
