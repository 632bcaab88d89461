#!/usr/bin/env bash
# The Docker engine for CI's container stages. `start`: installs docker.io, docker-compose (1.29) and debootstrap
# when missing and starts dockerd (vfs storage: works on this machine kind's file system) unless an engine already
# answers; records the pid only when it started one. `stop`: stops the dockerd that `start` started, nothing else.
set -euo pipefail
pidfile="${TMPDIR:-/tmp}/entitlement-notification-ci-dockerd.pid"

start() {
  if ! command -v dockerd >/dev/null || ! command -v docker-compose >/dev/null || ! command -v debootstrap >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io docker-compose debootstrap >/dev/null
  fi
  if docker info >/dev/null 2>&1; then
    echo "a Docker engine already answers: using it"
    return
  fi
  # shellcheck disable=SC2086
  nohup dockerd --storage-driver="${DOCKERD_STORAGE_DRIVER:-vfs}" >"${TMPDIR:-/tmp}/entitlement-notification-ci-dockerd.log" 2>&1 &
  echo $! >"$pidfile"
  for _ in $(seq 1 60); do
    if docker info >/dev/null 2>&1; then
      echo "started dockerd (pid $(cat "$pidfile"))"
      return
    fi
    sleep 1
  done
  echo "dockerd did not answer within 60 s:" >&2
  tail -n 20 "${TMPDIR:-/tmp}/entitlement-notification-ci-dockerd.log" >&2
  exit 1
}

stop() {
  [ -f "$pidfile" ] || return 0
  local pid
  pid="$(cat "$pidfile")"
  rm -f "$pidfile"
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 30); do
    kill -0 "$pid" 2>/dev/null || { echo "stopped dockerd (pid $pid)"; return 0; }
    sleep 1
  done
  kill -9 "$pid" 2>/dev/null || true
}

"$@"
