#!/usr/bin/env bash
# Builds a local stand-in for the official `node:24-bookworm-slim` image, so that the
# project's Dockerfiles can be built and run here with buildah (no Docker engine, no
# container registry). The image: Debian bookworm (minbase) + Node 24 from the npm
# registry's `node` package + npm + a `node` user (uid 1000), tagged
# docker.io/library/node:24-bookworm-slim. The machine's CA bundle is trusted inside it.
#
# (A copy of ../shared/tools/container-base.sh, so a clone can build its images alone.)
# Then:  buildah bud --isolation chroot --pull=never -t gatehouse-postgres -f docker/Dockerfile .
#        ctr=$(buildah from gatehouse-postgres); buildah run --isolation chroot "$ctr" -- node --version
# (buildah run with chroot isolation shares the host network: a server it starts listens
# on this machine's loopback.)
set -euo pipefail
TAG="${1:-docker.io/library/node:24-bookworm-slim}"
WORK="${CONTAINER_BASE_WORK:-/var/tmp/container-base}"
need=()
command -v buildah >/dev/null || need+=(buildah)
command -v podman >/dev/null || need+=(podman)
command -v debootstrap >/dev/null || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
if buildah images --quiet "$TAG" >/dev/null 2>&1 && [ -n "$(buildah images --quiet "$TAG" 2>/dev/null)" ]; then
  echo "container-base: $TAG already present"; exit 0
fi
rm -rf "$WORK"; mkdir -p "$WORK"
echo "container-base: debootstrap bookworm (about a minute)…"
debootstrap --variant=minbase bookworm "$WORK/rootfs" http://deb.debian.org/debian >"$WORK/debootstrap.log" 2>&1 ||
  { tail -20 "$WORK/debootstrap.log"; exit 1; }
echo "container-base: node 24 from the npm registry…"
npm install --prefix "$WORK/node" --no-save --no-audit --no-fund --loglevel=error node@24 >/dev/null
R="$WORK/rootfs"
cp "$WORK/node/node_modules/node/bin/node" "$R/usr/local/bin/node"
npm_dir="$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")"
mkdir -p "$R/usr/local/lib/node_modules" "$R/usr/local/etc" "$R/etc/ssl/certs"
cp -a "$npm_dir" "$R/usr/local/lib/node_modules/npm"
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$R/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$R/usr/local/bin/npx"
cp /etc/ssl/certs/ca-certificates.crt "$R/etc/ssl/certs/ca-certificates.crt"
echo 'cafile=/etc/ssl/certs/ca-certificates.crt' > "$R/usr/local/etc/npmrc"
cp /etc/resolv.conf "$R/etc/resolv.conf" 2>/dev/null || true
chroot "$R" sh -c 'getent passwd node >/dev/null || (groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node)'
rm -rf "$R"/var/cache/apt/archives/*.deb "$R"/var/lib/apt/lists/*
(cd "$R" && tar -c .) | podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
  --change 'CMD ["node"]' - "$TAG" >/dev/null
rm -rf "$WORK"
echo "container-base: built $TAG ($(buildah images --format '{{.Size}}' "$TAG" 2>/dev/null | head -1))"
