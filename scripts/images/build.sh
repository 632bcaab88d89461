#!/usr/bin/env bash
# Builds both service images from the repository's Dockerfile, tagged entitlement:local and notification:local (or
# ENTITLEMENT_IMAGE / NOTIFICATION_IMAGE), with BUN_IMAGE as the builder: oven/bun:1.4.4 when it is local or can be
# pulled, else the stand-in scripts/images/standins.sh made. Says how long each build has run every 15 s, and each
# image's size.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/images/common.sh
builder="$(pick_image BUN_IMAGE oven/bun:1.4.4)"
commit="$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
for service in entitlement notification; do
  variable="$(echo "$service" | tr '[:lower:]' '[:upper:]')_IMAGE"
  tag="${!variable:-$service:local}"
  echo "building $tag (builder $builder)"
  with_progress "$tag" docker_build -q --build-arg "SERVICE=$service" --build-arg "BUN_IMAGE=$builder" \
    --build-arg "BUILD_COMMIT=$commit" -t "$tag" .
  echo "$tag: $(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.1f MB", $1 / 1000000}')"
done
