# Shared by the image scripts: which docker client can build with BuildKit, and which image stands for a public one.
# shellcheck shell=bash

# The docker client that builds with BuildKit: `docker` when it has buildx; otherwise Debian's docker.io client
# (/usr/bin/docker, 20.10), which has BuildKit built in behind DOCKER_BUILDKIT=1. The legacy builder works too, but
# takes about 17 minutes instead of one on this machine kind, so it is the last resort.
docker_build() {
  if docker buildx version >/dev/null 2>&1; then
    DOCKER_BUILDKIT=1 docker build "$@"
  elif [ -x /usr/bin/docker ] && DOCKER_BUILDKIT=1 /usr/bin/docker build --help 2>/dev/null | grep -q -- '--secret'; then
    DOCKER_BUILDKIT=1 /usr/bin/docker build "$@"
  else
    echo "no BuildKit-capable docker client found: falling back to the legacy builder (slow)" >&2
    DOCKER_BUILDKIT=0 docker build "$@"
  fi
}

image_present() { docker image inspect "$1" >/dev/null 2>&1; }

# pick_image VARIABLE PUBLIC: the image to use for VARIABLE (POSTGRES_IMAGE, NATS_IMAGE, BUN_IMAGE): its value when
# set; else the image local.env names (standins.sh found it runs) when it is local; else PUBLIC when it is local or can
# be pulled; else the stand-in standins.env names when it is local; else PUBLIC (whatever uses it then fails saying it
# cannot be pulled). The test backend applies the same rule.
pick_image() {
  local variable="$1" public="$2" standin chosen
  if [ -n "${!variable:-}" ]; then echo "${!variable}"; return; fi
  chosen="$(sed -n "s/^$variable=//p" "$(dirname "${BASH_SOURCE[0]}")/local.env" 2>/dev/null || true)"
  if [ -n "$chosen" ] && image_present "$chosen"; then echo "$chosen"; return; fi
  if image_present "$public" || docker pull -q "$public" >/dev/null 2>&1; then echo "$public"; return; fi
  standin="$(sed -n "s/^$variable=//p" "$(dirname "${BASH_SOURCE[0]}")/standins.env")"
  if [ -n "$standin" ] && image_present "$standin"; then echo "$standin"; return; fi
  echo "$public"
}

# with_progress LABEL COMMAND...: runs COMMAND with its output kept aside, printing a line every 15 s while it runs
# (image builds and debootstrap take minutes) and its output only when it fails.
with_progress() {
  local label="$1" log started pid code=0
  shift
  log="$(mktemp)"
  started=$SECONDS
  "$@" >"$log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if (( (SECONDS - started) % 15 == 0 )) && kill -0 "$pid" 2>/dev/null; then
      echo "  … $label: $((SECONDS - started)) s"
    fi
  done
  wait "$pid" || code=$?
  if [ "$code" -ne 0 ]; then cat "$log" >&2; fi
  rm -f "$log"
  echo "  $label: done in $((SECONDS - started)) s (exit $code)"
  return "$code"
}
