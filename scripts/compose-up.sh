#!/usr/bin/env bash
# `docker compose up` for a person at a terminal: refuses before starting anything when a host port is taken (naming
# the variable that moves it), brings the project up and waits for both services, stops what it started when they do
# not come up (instead of leaving it half up), and then says where to go and where the demo tokens are.
#   scripts/compose-up.sh [--profile observability] [other `up` arguments, e.g. --build]
#   ENTITLEMENT_HOST_PORT, NOTIFICATION_HOST_PORT, PROMETHEUS_HOST_PORT: host ports (8080, 8081, 9090)
#   COMPOSE: the compose command (default `docker compose`, else `docker-compose`)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${COMPOSE:-}" ]; then read -r -a compose <<<"$COMPOSE"
elif docker compose version >/dev/null 2>&1; then compose=(docker compose)
else compose=(docker-compose); fi

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

"${compose[@]}" "${profile_args[@]}" up -d "${up_args[@]}"
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
"${compose[@]}" "${profile_args[@]}" down
exit 1
