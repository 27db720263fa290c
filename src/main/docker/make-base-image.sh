#!/usr/bin/env bash
# Makes a local JRE base image for Dockerfile.jvm where no image registry is reachable: Debian
# bookworm minbase from the Debian mirror apt already uses, and a JRE jlink'd from this machine's
# Temurin 25 JDK at /opt/java/openjdk, with JAVA_HOME and PATH set as eclipse-temurin:25-jre sets them.
# Needs root (debootstrap, chroot) and podman. Then:
#   podman build -f src/main/docker/Dockerfile.jvm --build-arg RUNTIME_IMAGE=localhost/warden-jre:25 -t warden:0.1.0 .
#
# The same minbase with Python instead of the JRE, for Dockerfile.lilbee's BASE:
#   JRE=0 PACKAGES=python3-venv WORK=target/python-base-image make-base-image.sh localhost/python:3-bookworm
# The minbase alone, for Dockerfile.native's RUNTIME_IMAGE (REUSE=1 after the JRE base: the same rootfs, no JRE):
#   JRE=0 REUSE=1 make-base-image.sh localhost/warden-base:bookworm
#
# usage: make-base-image.sh [IMAGE]   (default localhost/warden-jre:25; WORK=dir for the rootfs,
#        JAVA_HOME for the JDK to jlink, REUSE=1 to keep an existing rootfs, PACKAGES=a,b Debian packages
#        to add, JRE=0 for no JRE, ROOTFS_ONLY=1 to stop once the rootfs is there: a later REUSE=1 run makes the
#        image from it)
set -euo pipefail
image=${1:-localhost/warden-jre:25}
work=${WORK:-target/base-image}
jdk=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
packages=${PACKAGES:-}
jre=${JRE:-1}
# The Debian mirror apt itself uses here (commented-out lines in sources files are not mirrors).
mirror=${MIRROR:-$(apt-cache policy 2>/dev/null | grep -oE 'https?://[^ ]+/debian ' | head -1 | tr -d ' ' || true)}
if [ -z "$mirror" ]; then
  echo "apt knows no Debian mirror (apt-cache policy): set MIRROR to one" >&2
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  echo "make-base-image.sh needs root for debootstrap and chroot" >&2
  exit 1
fi

if [ "${REUSE:-0}" != 1 ] || [ ! -x "$work/rootfs/bin/sh" ]; then
  rm -rf "$work" && mkdir -p "$work"
  echo "debootstrap bookworm from $mirror (log: $work/debootstrap.log)"
  debootstrap --variant=minbase ${packages:+--include="$packages"} bookworm "$work/rootfs" "$mirror" > "$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
fi
if [ "${ROOTFS_ONLY:-0}" = 1 ]; then
  echo "$work/rootfs"
  exit 0
fi
rm -rf "$work/rootfs/opt/java"
if [ "$jre" = 1 ]; then
  # The JRE: every module of the JDK but its development tools, as the official JRE images ship.
  modules=$("$jdk/bin/java" --list-modules | sed 's/@.*//' \
    | grep -vx -e jdk.jlink -e jdk.jpackage -e jdk.jshell -e jdk.compiler -e jdk.javadoc -e jdk.jdeps -e jdk.jartool \
    | paste -sd,)
  "$jdk/bin/jlink" --add-modules "$modules" --strip-debug --no-man-pages --no-header-files --compress=zip-6 \
    --output "$work/rootfs/opt/java/openjdk"
fi
rm -rf "$work"/rootfs/var/cache/apt/archives/*.deb "$work"/rootfs/var/cache/apt/*.bin "$work"/rootfs/var/lib/apt/lists/*
# Slim, as Debian's -slim images are: no manuals, documentation or message catalogues (about 47 of minbase's 121 MB).
rm -rf "$work"/rootfs/usr/share/man/* "$work"/rootfs/usr/share/info/* "$work"/rootfs/usr/share/locale/* \
  "$work"/rootfs/usr/share/lintian/* && find "$work"/rootfs/usr/share/doc -mindepth 1 ! -name copyright ! -type d -delete
if [ "$jre" = 1 ]; then
  tar -C "$work/rootfs" -c . | podman import \
    --change 'ENV JAVA_HOME=/opt/java/openjdk' \
    --change 'ENV PATH=/opt/java/openjdk/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["java","-version"]' \
    - "$image" > /dev/null
  podman run --rm "$image" java -version
else
  tar -C "$work/rootfs" -c . | podman import --change 'ENV LANG=C.UTF-8' --change 'CMD ["bash"]' - "$image" > /dev/null
fi
