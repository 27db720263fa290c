#!/usr/bin/env bash
# Saves images for node-up.sh to import into each node's containerd (no registry is reachable here; the
# chart's pods then run them with imagePullPolicy Never or IfNotPresent): the sandbox ("pause") image,
# made here from Debian's static catatonit, and each IMAGE named, from podman's store.
# usage: node-images.sh OUT IMAGE...    (OUT/pause.tar, OUT/<name>_<tag>.tar for each IMAGE; run again to add more)
set -euo pipefail
out=$(mkdir -p "${1:?usage: node-images.sh OUT IMAGE...}" && cd "$1" && pwd); shift
catatonit=$(command -v catatonit || echo /usr/bin/catatonit)
[ -x "$catatonit" ] || { echo "node-images.sh: no catatonit (Debian package catatonit) for the pause image" >&2; exit 1; }
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
cp "$catatonit" "$context/pause"
cat > "$context/Containerfile" <<'EOF'
# The pod sandbox: a static catatonit that sleeps until SIGTERM or SIGINT.
FROM scratch
COPY pause /pause
USER 65535:65535
ENTRYPOINT ["/pause", "-P"]
EOF
podman build -q -t localhost/pause:catatonit "$context" >/dev/null
rm -f "$out/pause.tar" && podman save -q -o "$out/pause.tar" localhost/pause:catatonit
for image in "$@"; do
  name=${image##*/}; name=${name//:/_}
  rm -f "$out/$name.tar" && podman save -q -o "$out/$name.tar" "$image"
done
ls -l "$out"
