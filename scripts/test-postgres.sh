#!/usr/bin/env bash
# Prints a PostgreSQL URL for the test suite (MNEMO_TEST_DATABASE_URL) on
# stdout, making one available first. Idempotent: run it as often as you like.
#
# - MNEMO_TEST_DATABASE_URL already set: checked and printed as is (use your
#   own server; the user must be allowed to create schemas).
# - Otherwise the machine's PostgreSQL: installed when missing (Debian/Ubuntu,
#   needs root), started, and given the role mnemo/mnemo and the database
#   mnemo_test. Each test works in a schema of its own and drops it.
#
# Fails (non-zero, nothing on stdout) when no database can be reached: the
# PostgreSQL tests must run, never skip.
#
#   export MNEMO_TEST_DATABASE_URL=$(scripts/test-postgres.sh)
set -euo pipefail

log() { echo "test-postgres: $*" >&2; }

reachable() {
  # psql when available; else bash's /dev/tcp on the URL's host and port.
  if command -v psql >/dev/null 2>&1; then
    psql "$1" -qAtc 'select 1' >/dev/null 2>&1
  else
    local hostport="${1#*@}"
    hostport="${hostport%%/*}"
    (exec 3<>"/dev/tcp/${hostport%%:*}/${hostport##*:}") 2>/dev/null
  fi
}

if [ -n "${MNEMO_TEST_DATABASE_URL:-}" ]; then
  if ! reachable "$MNEMO_TEST_DATABASE_URL"; then
    log "MNEMO_TEST_DATABASE_URL is set but cannot be reached"
    exit 1
  fi
  echo "$MNEMO_TEST_DATABASE_URL"
  exit 0
fi

URL="postgres://mnemo:mnemo@127.0.0.1:5432/mnemo_test"
if reachable "$URL"; then
  echo "$URL"
  exit 0
fi

as_postgres() {
  if [ "$(id -u)" = 0 ]; then
    su postgres -c "$1"
  else
    sudo -n -u postgres sh -c "$1"
  fi
}

if ! command -v pg_ctlcluster >/dev/null 2>&1 || [ ! -d /etc/postgresql ] \
  || [ -z "$(ls /etc/postgresql 2>/dev/null)" ]; then
  if [ "$(id -u)" != 0 ]; then
    log "PostgreSQL is not installed and this is not root: install it (apt-get install postgresql) or set MNEMO_TEST_DATABASE_URL"
    exit 1
  fi
  log "installing PostgreSQL"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
PG_VERSION="$(ls /etc/postgresql | sort -n | tail -1)"
if ! pg_ctlcluster "$PG_VERSION" main status >/dev/null 2>&1; then
  log "starting PostgreSQL $PG_VERSION"
  if [ "$(id -u)" = 0 ]; then
    pg_ctlcluster "$PG_VERSION" main start >&2
  else
    sudo -n pg_ctlcluster "$PG_VERSION" main start >&2
  fi
fi
for _ in $(seq 1 30); do
  as_postgres "psql -qAtc 'select 1'" >/dev/null 2>&1 && break
  sleep 1
done
as_postgres "psql -qAtc \"select 1 from pg_roles where rolname='mnemo'\"" | grep -q 1 \
  || as_postgres "psql -qc \"create role mnemo login superuser password 'mnemo'\"" >&2
as_postgres "psql -qAtc \"select 1 from pg_database where datname='mnemo_test'\"" | grep -q 1 \
  || as_postgres "psql -qc 'create database mnemo_test owner mnemo'" >&2
if ! reachable "$URL"; then
  log "PostgreSQL started but $URL cannot be reached"
  exit 1
fi
echo "$URL"
