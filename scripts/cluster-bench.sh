#!/usr/bin/env bash
# Search latency through Mnemo on the embedded index vs a 3-peer Qdrant
# cluster, on the same data and the same machine, and the time of
# `mnemo migrate --vectors-to` that moves the embedded deployment there
# (issue 20). Release binary, real MiniLM embedder, wrk on loopback.
#
#   scripts/cluster-bench.sh [MEMORIES] [SECONDS]     (default 100000, 20)
#
# The corpus: MEMORIES long-term memories, 10,000 of them for `bench-user`
# (the user every query searches) and the rest spread over other users, 100
# each, so the searched user's filter selects a tenth of the collection.
# Phases:
#   1. `mnemo ingest` into an embedded data directory (SQLite + qdrant-edge);
#   2. `mnemo serve` on it; wrk at 1 and 16 connections (scripts/search.lua);
#   3. a 3-peer Qdrant cluster (scripts/qdrant-server.sh, 3 shards, RF 2),
#      then `mnemo migrate --from sqlite://… --to postgres://…
#      --vectors-to http://…` (store copied, cached embeddings reused);
#   4. `mnemo serve` on PostgreSQL + the cluster; the same wrk runs.
# Needs wrk (apt-get install wrk), PostgreSQL (scripts/test-postgres.sh) and
# the cached Qdrant binary (scripts/qdrant-server.sh build).
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-100000}"; SECS="${2:-20}"
BIN="$(realpath "${MNEMO_BIN:-target/release/mnemo}")"
command -v wrk >/dev/null || { echo "wrk missing: apt-get install wrk" >&2; exit 1; }
scripts/qdrant-server.sh path >/dev/null || { echo "no Qdrant binary: scripts/qdrant-server.sh build" >&2; exit 1; }

if [ "${1:-}" != "--inner" ]; then
  WORK="$(mktemp -d)"
  PG_ADMIN="$(scripts/test-postgres.sh)"
  DB="mnemo_bench_$$"
  psql "$PG_ADMIN" -qAtc "create database $DB" >/dev/null
  trap 'psql "$PG_ADMIN" -qAtc "drop database if exists $DB" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
  export BENCH_WORK="$WORK" BENCH_PG="${PG_ADMIN%/*}/$DB" BENCH_N="$N" BENCH_SECS="$SECS" BENCH_BIN="$BIN"
  scripts/qdrant-server.sh run --cluster 3 -- "$0" --inner
  exit $?
fi

WORK="$BENCH_WORK"; N="$BENCH_N"; SECS="$BENCH_SECS"; BIN="$BENCH_BIN"; PG="$BENCH_PG"
QDRANT="${MNEMO_TEST_QDRANT_URL:?}"
PORT=8431; PID=
trap 'kill $PID 2>/dev/null || true' EXIT
scripts/bench-corpus.py "$N" 10000 > "$WORK/corpus.jsonl"
sed 's/^requests_per_second_per_key = .*/requests_per_second_per_key = 0.0/' memory_policies.toml > "$WORK/policy.toml"
grep -q '^requests_per_second_per_key = 0.0' "$WORK/policy.toml"
export MNEMO_POLICY="$WORK/policy.toml" MNEMO_LOG=warn

seconds() { python3 -c 'import time; print(f"{time.time():.3f}")'; }
elapsed() { python3 -c "print(f'{$(seconds) - $1:.1f}')"; }

load() {
  local name=$1; shift
  "$BIN" serve --insecure-dev --listen "127.0.0.1:$PORT" "$@" &
  PID=$!
  for _ in $(seq 1 300); do curl -sf "127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.2; done
  curl -sf "127.0.0.1:$PORT/readyz" >/dev/null || { echo "serve ($name) not ready" >&2; exit 1; }
  local rss; rss=$(ps -o rss= -p "$PID")
  echo "== $name: RSS after start $((rss / 1024)) MiB"
  # warm-up, not reported
  wrk -t1 -c1 -d3s -s scripts/search.lua "http://127.0.0.1:$PORT" >/dev/null
  for c in 1 16; do
    echo "-- $name, $c connection(s), ${SECS}s"
    wrk -t"$(( c < 2 ? 1 : 2 ))" -c"$c" -d"${SECS}s" --latency -s scripts/search.lua "http://127.0.0.1:$PORT" \
      | grep -E "Requests/sec|requests|p50|p95|p99"
  done
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
}

echo "corpus: $N memories (10000 for bench-user, the rest 100 per user); uptime: $(uptime)"
t=$(seconds)
MNEMO_DATA_DIR="$WORK/embedded" "$BIN" ingest "$WORK/corpus.jsonl" >/dev/null
echo "ingest (embedded, real embedder): $(elapsed "$t") s"
# BENCH_QUIET_FILE: a file whose existence asks other work on the machine to
# pause; created now, removed at exit, and the measurements wait (at most
# 10 min) for the 1-minute load average to fall below 1.5 first.
if [ -n "${BENCH_QUIET_FILE:-}" ]; then
  touch "$BENCH_QUIET_FILE"
  trap 'kill $PID 2>/dev/null || true; rm -f "$BENCH_QUIET_FILE"' EXIT
  for _ in $(seq 1 60); do
    awk '{exit !($1 < 1.5)}' /proc/loadavg && break
    sleep 10
  done
  echo "measuring at load: $(cut -d' ' -f1-3 /proc/loadavg)"
fi
load embedded --data-dir "$WORK/embedded"

t=$(seconds)
"$BIN" migrate --data-dir "$WORK/migrated" --from "sqlite://$WORK/embedded/mnemo.db" --to "$PG" \
  --vectors-to "$QDRANT" --qdrant-url "$QDRANT" --qdrant-shards 3 --qdrant-replication-factor 2
echo "migrate to PostgreSQL + 3-peer Qdrant cluster (3 shards, RF 2): $(elapsed "$t") s"
load "cluster (PostgreSQL + 3 Qdrant peers)" --data-dir "$WORK/migrated" --database-url "$PG" --qdrant-url "$QDRANT"
echo "uptime at end: $(uptime)"
