#!/bin/sh
# The parts of the official postgres image's entrypoint the tests and compose.yml use: first start initialises
# $PGDATA with POSTGRES_USER / POSTGRES_PASSWORD (network connections authenticate with POSTGRES_HOST_AUTH_METHOD,
# default scram-sha-256) and creates POSTGRES_DB; then `postgres "$@"` runs as the postgres user on every address.
set -eu
if [ "${1#-}" != "$1" ]; then set -- postgres "$@"; fi
if [ "$1" != postgres ]; then exec "$@"; fi
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA"
  chown -R postgres:postgres "$PGDATA"
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
user="${POSTGRES_USER:-postgres}"
db="${POSTGRES_DB:-$user}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  auth="${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}"
  [ -n "${POSTGRES_PASSWORD:-}" ] || [ "$auth" = trust ] || { echo "POSTGRES_PASSWORD is required" >&2; exit 1; }
  pwfile="$(mktemp)"
  printf '%s\n' "${POSTGRES_PASSWORD:-postgres}" > "$pwfile"
  initdb -D "$PGDATA" -U "$user" --pwfile="$pwfile" -E UTF8 --auth-local=trust --auth-host="$auth" >/dev/null
  rm -f "$pwfile"
  echo "host all all all $auth" >> "$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    echo "CREATE DATABASE \"$db\";" | postgres --single -D "$PGDATA" -j postgres >/dev/null
  fi
  echo "initialised $PGDATA for user $user, database $db"
fi
shift
exec postgres -c listen_addresses='*' "$@"
