#!/usr/bin/env bash
# Makes the images the tests, the Dockerfile and compose.yml need when the public ones cannot be pulled (no access to
# Docker Hub). For each of postgres:16-alpine, nats:2.11-alpine, oven/bun:1.4.4 and prom/prometheus (compose.yml's
# observability profile): nothing to do when the image is already local or `docker pull` gets it (directly or through
# the daemon's registry mirror) and it runs (`<program> --version` in a container); otherwise a stand-in is built from
# Debian packages on a base image made with debootstrap from the machine's Debian mirror, and tagged with the name in
# standins.env. Idempotent: stand-ins that exist and run are kept (`--rebuild` makes them again).
# Writes scripts/images/local.env (not committed): for each image variable, the image this machine has that runs,
# public or stand-in, for compose (`--env-file scripts/images/local.env`) and scripts/compose-up.sh.
#
# Usage: scripts/images/standins.sh [--rebuild]      (root, for debootstrap; needs a running Docker engine)
# Then:  docker-compose --env-file scripts/images/local.env up -d, or set -a; . scripts/images/local.env; set +a
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/common.sh"
. "$here/standins.env"
BASE_IMAGE="${BASE_IMAGE:-standin/debian:bookworm}"
PROMETHEUS_PUBLIC="prom/prometheus:v2.53.4" # the default of compose.yml's PROMETHEUS_IMAGE
rebuild=false
[ "${1:-}" = "--rebuild" ] && rebuild=true

# The Debian mirror apt already uses (deb822 .sources or one-line .list), unless MIRROR is given.
debian_mirror() {
  if [ -n "${MIRROR:-}" ]; then echo "$MIRROR"; return; fi
  local found
  found="$(grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -n1 || true)"
  [ -z "$found" ] && found="$(grep -hE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
    | awk '{print $2}' | grep -E 'debian/?$' | head -n1 || true)"
  echo "${found:-http://deb.debian.org/debian}"
}

base_made=false
make_base() {
  if $base_made || { image_present "$BASE_IMAGE" && ! $rebuild; }; then return; fi
  base_made=true
  command -v debootstrap >/dev/null || { echo "debootstrap is missing: apt-get install -y debootstrap" >&2; exit 1; }
  local dir mirror
  dir="$(mktemp -d)"
  mirror="$(debian_mirror)"
  echo "base image: debootstrap bookworm from $mirror"
  with_progress "debootstrap" debootstrap --variant=minbase bookworm "$dir" "$mirror"
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
  chmod 755 "$dir" # mktemp's 0700 would become the image's / and lock every non-root user out
  tar -C "$dir" -c . | docker import - "$BASE_IMAGE" >/dev/null
  rm -rf "$dir"
}

# The build context of one stand-in: its folder, plus the machine's local CA certificates (those update-ca-certificates
# adds, e.g. a TLS-inspecting proxy's) so apt and npm inside the build trust what the host trusts.
build_standin() {
  local name="$1" tag="$2" context
  context="$(mktemp -d)"
  cp -r "$here/$name/." "$context/"
  mkdir -p "$context/local-ca"
  find /usr/local/share/ca-certificates -name '*.crt' -exec cp {} "$context/local-ca/" \; 2>/dev/null || true
  if [ "$name" = bun ] && [ "$(bun --version 2>/dev/null || true)" = "1.4.4" ]; then
    # The machine's own Bun 1.4.4 (the npm package's binary) saves installing Node.js and npm in the image.
    cp "$(readlink -f "$(command -v bun)")" "$context/bun"
  fi
  echo "building $tag"
  with_progress "$tag" docker_build -q --build-arg "BASE=$BASE_IMAGE" -t "$tag" "$context"
  rm -rf "$context"
}

# runs IMAGE PROGRAM: whether a container of IMAGE starts and `PROGRAM --version` exits 0 in it (an image can be listed
# and still not run: a half-written layer, another architecture, a broken stand-in).
runs() { docker run --rm --network none --entrypoint "$2" "$1" --version >/dev/null 2>&1; }

chosen=()
# ensure VARIABLE PUBLIC FOLDER TAG PROGRAM: the public image when it is (or can be pulled and then is) runnable, else
# the stand-in TAG, built from FOLDER unless it is there and runs; the one used goes into local.env as VARIABLE.
ensure() {
  local variable="$1" public="$2" name="$3" tag="$4" program="$5"
  if image_present "$public"; then
    if runs "$public" "$program"; then echo "$public: present"; chosen+=("$variable=$public"); return; fi
    echo "$public: present but does not run ($program --version failed in it)"
  elif docker pull -q "$public" >/dev/null 2>&1 && runs "$public" "$program"; then
    echo "$public: pulled"; chosen+=("$variable=$public"); return
  fi
  if image_present "$tag" && ! $rebuild; then
    if runs "$tag" "$program"; then
      echo "$public: not usable, stand-in $tag present"; chosen+=("$variable=$tag"); return
    fi
    echo "stand-in $tag: present but does not run: building it again"
  fi
  make_base
  build_standin "$name" "$tag"
  runs "$tag" "$program" || { echo "stand-in $tag: built, but $program --version fails in it" >&2; exit 1; }
  echo "$public: not usable, stand-in $tag built"
  chosen+=("$variable=$tag")
}

docker info >/dev/null 2>&1 || { echo "no Docker engine answers (docker info failed)" >&2; exit 1; }
ensure POSTGRES_IMAGE postgres:16-alpine postgres "$POSTGRES_IMAGE" postgres
ensure NATS_IMAGE nats:2.11-alpine nats "$NATS_IMAGE" nats-server
ensure BUN_IMAGE oven/bun:1.4.4 bun "$BUN_IMAGE" bun
ensure PROMETHEUS_IMAGE "$PROMETHEUS_PUBLIC" prometheus "$PROMETHEUS_IMAGE" prometheus
{
  echo "# Written by scripts/images/standins.sh: the images this machine has that run (public or stand-in)."
  printf '%s\n' "${chosen[@]}"
} >"$here/local.env"
echo "wrote scripts/images/local.env: docker-compose --env-file scripts/images/local.env up -d (scripts/compose-up.sh reads it)"
