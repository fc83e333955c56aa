#!/usr/bin/env bash
# Builds the images the deployment tests run, without a registry: a Debian base made from
# Debian's own package mirror, stand-ins for the compose file's Postgres and Caddy made from
# Debian's packages (honouring the same environment variables and health checks), and bo's
# image from docker/Dockerfile's `prebuilt` stage with a binary built outside.
#
#   tests/deploy/images.sh BO_SERVER_BINARY
#
# Prints the variables the compose file reads (BO_BASE_IMAGE, BO_POSTGRES_IMAGE, BO_PROXY_IMAGE,
# BO_IMAGE), one `NAME=value` per line, on its standard output; everything else goes to stderr.
# The base is built once per machine and per state of Debian's suite: its tag carries the date
# of the suite's Release file, so a point release makes a new one and an unchanged suite reuses
# the old (the debootstrap takes about three minutes). The stand-ins are rebuilt when their
# files change (docker's layer cache).
set -euo pipefail
cd "$(dirname "$0")/../.."
binary=${1:?usage: tests/deploy/images.sh BO_SERVER_BINARY}
mirror=${BO_DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=bookworm

say() { echo "== $*" >&2; }

released=$(curl -fsS --max-time 30 "$mirror/dists/$suite/Release" | sed -n 's/^Date: //p')
[ -n "$released" ] || { echo "could not read the Date of $mirror/dists/$suite/Release" >&2; exit 1; }
base="bo-test-base:$suite-slim-$(date -u -d "$released" +%Y%m%d%H%M)"
if ! docker image inspect "$base" >/dev/null 2>&1; then
    say "building the Debian base $base from $mirror (debootstrap, a few minutes)"
    root=$(mktemp -d)
    trap 'rm -rf "$root"' EXIT
    debootstrap --variant=minbase "$suite" "$root/rootfs" "$mirror" >&2
    # What Debian's official slim images leave out (their builder's "slimify"): documentation,
    # manuals and translations, now and in every package installed later; package lists and
    # caches.
    cat >"$root/rootfs/etc/dpkg/dpkg.cfg.d/slim" <<'SLIM'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
SLIM
    find "$root/rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
    rm -rf "$root"/rootfs/usr/share/{man,info,locale,groff,lintian,linda}/*
    rm -rf "$root"/rootfs/var/lib/apt/lists/* "$root"/rootfs/var/cache/apt/*.bin "$root"/rootfs/var/cache/apt/archives/*.deb
    tar -C "$root/rootfs" -c . | docker import - "$base" >&2
    rm -rf "$root"
    trap - EXIT
    # Earlier bases (an older state of the suite) are not needed again.
    docker image ls bo-test-base --format '{{.Repository}}:{{.Tag}}' | grep -vxF "$base" | xargs -r docker image rm >&2 || true
fi

say "stand-ins for postgres and caddy on $base"
docker build -q --build-arg BASE="$base" -t bo-test-postgres:latest tests/deploy/standins/postgres >&2
docker build -q --build-arg BASE="$base" -t bo-test-caddy:latest tests/deploy/standins/caddy >&2

say "bo's image from docker/Dockerfile (stage prebuilt) with $binary"
context=$(mktemp -d)
cp "$binary" "$context/bo-server"
docker build -q --target prebuilt --build-arg BASE="$base" \
    -f docker/Dockerfile -t bo-test:latest "$context" >&2
rm -rf "$context"

echo "BO_BASE_IMAGE=$base"
echo "BO_POSTGRES_IMAGE=bo-test-postgres:latest"
echo "BO_PROXY_IMAGE=bo-test-caddy:latest"
echo "BO_IMAGE=bo-test:latest"
