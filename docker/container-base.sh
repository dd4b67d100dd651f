#!/usr/bin/env bash
# Builds a local stand-in for the official Node base image the Dockerfile pins, so that the
# images can be built and run with buildah where no container registry is reachable (no Docker
# engine either). The image: Debian bookworm (minbase) + the exact Node release the Dockerfile
# pins (ARG NODE_IMAGE, from the npm registry's `node` package) + npm + a `node` user (uid 1000),
# tagged with the pinned name (docker.io/library/node:24.x.y-bookworm-slim) and
# docker.io/library/node:24-bookworm-slim. The machine's CA bundle is trusted inside it.
#
#   docker/container-base.sh [--root DIR --runroot DIR] [--storage-driver NAME]
#
# --root/--runroot/--storage-driver: the containers storage to build into (buildah's and podman's
# own options), so two builds on one machine need not share one. The work folder is private to
# each run (mktemp; CONTAINER_BASE_WORK to choose it) and removed at the end.
# Then, with the same storage options:
#   buildah bud --isolation chroot --pull=never --layers --format docker \
#     --build-arg SERVER=postgres -t gatehouse-postgres -f docker/Dockerfile .
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
storage=()
while [ $# -gt 0 ]; do
  case "$1" in
    --root|--runroot|--storage-driver) storage+=("$1" "$2"); shift 2 ;;
    --root=*|--runroot=*|--storage-driver=*) storage+=("$1"); shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "container-base: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
PINNED="$(sed -n 's/^ARG NODE_IMAGE=\(\S*\)$/\1/p' "$here/Dockerfile")"
VERSION="$(printf '%s' "$PINNED" | sed -n 's/.*node:\([0-9][0-9.]*\)-.*/\1/p')"
[ -n "$VERSION" ] || { echo "container-base: no Node version in docker/Dockerfile's ARG NODE_IMAGE ($PINNED)" >&2; exit 1; }
GENERIC="docker.io/library/node:${VERSION%%.*}-bookworm-slim"

need=()
command -v buildah >/dev/null || need+=(buildah)
command -v podman >/dev/null || need+=(podman)
command -v debootstrap >/dev/null || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
if [ -n "$(buildah "${storage[@]}" images --quiet "$PINNED" 2>/dev/null)" ]; then
  echo "container-base: $PINNED already present"; exit 0
fi
WORK="${CONTAINER_BASE_WORK:-$(mktemp -d /var/tmp/container-base.XXXXXX)}"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK"
echo "container-base: debootstrap bookworm (about a minute)…"
debootstrap --variant=minbase bookworm "$WORK/rootfs" http://deb.debian.org/debian >"$WORK/debootstrap.log" 2>&1 ||
  { tail -20 "$WORK/debootstrap.log"; exit 1; }
echo "container-base: node $VERSION from the npm registry…"
npm install --prefix "$WORK/node" --no-save --no-audit --no-fund --loglevel=error "node@$VERSION" >/dev/null
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
(cd "$R" && tar -c .) | podman "${storage[@]}" import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
  --change 'CMD ["node"]' - "$PINNED" >/dev/null
buildah "${storage[@]}" tag "$PINNED" "$GENERIC"
echo "container-base: built $PINNED (also $GENERIC; $(buildah "${storage[@]}" images --format '{{.Size}}' "$PINNED" 2>/dev/null | head -1))"
