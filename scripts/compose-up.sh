#!/usr/bin/env bash
# `docker compose up` for a person at a terminal: refuses before starting anything when a host port is taken (naming
# the variable that moves it), brings the project up and waits for both services, removes what it started when `up`
# fails or they do not come up (containers, network, the volumes this run created; not half up, nothing left over),
# and then says where to go and where the demo tokens are.
#   scripts/compose-up.sh [--profile observability] [other `up` arguments, e.g. --build]
#   ENTITLEMENT_HOST_PORT, NOTIFICATION_HOST_PORT, PROMETHEUS_HOST_PORT: host ports (8080, 8081, 9090)
#   COMPOSE: the compose command (default `docker compose`, else `docker-compose`)
#   POSTGRES_IMAGE, NATS_IMAGE, BUN_IMAGE, PROMETHEUS_IMAGE: default to those scripts/images/local.env names, when
#   scripts/images/standins.sh wrote it (the images this machine has that run), else to compose.yml's
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${COMPOSE:-}" ]; then read -r -a compose <<<"$COMPOSE"
elif docker compose version >/dev/null 2>&1; then compose=(docker compose)
else compose=(docker-compose); fi

images_env=scripts/images/local.env
if [ -f "$images_env" ]; then
  while IFS='=' read -r name value; do
    [[ "$name" =~ ^[A-Z_][A-Z0-9_]*$ ]] || continue
    if [ -z "${!name:-}" ]; then export "$name=$value"; fi
  done <"$images_env"
fi

# The project's name, as compose derives it (-p, COMPOSE_PROJECT_NAME, else the folder's), to find its volumes.
project="${COMPOSE_PROJECT_NAME:-$(basename "$PWD" | tr '[:upper:]' '[:lower:]' | tr -cd 'a-z0-9_-')}"
for i in "${!compose[@]}"; do
  case "${compose[$i]}" in -p | --project-name) project="${compose[$((i + 1))]:-$project}" ;; esac
done
project_volumes() { docker volume ls -q --filter "label=com.docker.compose.project=$project" 2>/dev/null || true; }

profile_args=()
up_args=()
observability=false
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) profile_args+=(--profile "$2"); [ "$2" = observability ] && observability=true; shift 2 ;;
    *) up_args+=("$1"); shift ;;
  esac
done
case ",${COMPOSE_PROFILES:-}," in *,observability,*) observability=true ;; esac

e_port="${ENTITLEMENT_HOST_PORT:-8080}" n_port="${NOTIFICATION_HOST_PORT:-8081}" p_port="${PROMETHEUS_HOST_PORT:-9090}"
taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
check_port() {
  if taken "$2"; then
    echo "port $2 is taken (by another stack?): set $1 to a free port, e.g. $1=$(($2 + 100)) $0" >&2
    exit 1
  fi
}
check_port ENTITLEMENT_HOST_PORT "$e_port"
check_port NOTIFICATION_HOST_PORT "$n_port"
$observability && check_port PROMETHEUS_HOST_PORT "$p_port"

# After a failed `up` or services that never got ready: `down` (containers, network), then the project's volumes that
# did not exist before this run. Volumes of an earlier run hold its data and stay.
remove_what_this_run_made() {
  "${compose[@]}" "${profile_args[@]}" down || true
  local volume
  for volume in $(project_volumes); do
    if ! grep -qxF -- "$volume" <<<"$volumes_before"; then docker volume rm "$volume" >/dev/null || true; fi
  done
}

volumes_before="$(project_volumes)"
if ! "${compose[@]}" "${profile_args[@]}" up -d "${up_args[@]}"; then
  echo "up failed: removing what it made" >&2
  remove_what_this_run_made
  exit 1
fi
ready() { curl -fsS -o /dev/null "http://127.0.0.1:$1/readyz"; }
for _ in $(seq 1 120); do
  if ready "$e_port" && ready "$n_port"; then
    cat <<MSG

up: Entitlement http://localhost:$e_port, Notification http://localhost:$n_port$($observability && echo ", Prometheus http://localhost:$p_port (targets, alerts)")
demo tokens (compose.yml's comments): API 'Authorization: Bearer ent_compose-demo-token-change-me',
debug inbox 'Authorization: Bearer compose-demo-debug-token-change-me'. Try:
  curl -s -H 'Authorization: Bearer ent_compose-demo-token-change-me' http://localhost:$e_port/v1/users/u_1/entitlements
stop with: ${compose[*]} ${profile_args[*]} down   (add -v to drop the data)
MSG
    exit 0
  fi
  sleep 2
done
echo "the services did not become ready within 4 minutes; their logs:" >&2
"${compose[@]}" "${profile_args[@]}" logs --tail 30 entitlement notification >&2 || true
remove_what_this_run_made
exit 1
