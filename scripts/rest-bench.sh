#!/usr/bin/env bash
# REST search latency under load: a release `mnemo serve` (dev mode, loopback)
# with 10k long-term memories for one user, driven by wrk at 1 and 16
# concurrent connections. Traffic stays on 127.0.0.1; every run is bounded.
# usage: scripts/rest-bench.sh [MEMORIES] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-10000}"; SECS="${2:-20}"; PORT=8421
BIN="${MNEMO_BIN:-target/release/mnemo}"
DATA="$(mktemp -d)"; trap 'kill $PID 2>/dev/null || true; rm -rf "$DATA"' EXIT
command -v wrk >/dev/null || { echo "wrk missing: apt-get install wrk" >&2; exit 1; }
scripts/bench-corpus.py "$N" > "$DATA/corpus.jsonl"
# The shipped policy with the per-key rate limit off: every request of the
# benchmark comes from one (dev-mode) actor.
sed 's/^requests_per_second_per_key = .*/requests_per_second_per_key = 0.0/' memory_policies.toml > "$DATA/policy.toml"
grep -q '^requests_per_second_per_key = 0.0' "$DATA/policy.toml"
export MNEMO_POLICY="$DATA/policy.toml"
MNEMO_DATA_DIR="$DATA/db" "$BIN" ingest "$DATA/corpus.jsonl"
MNEMO_DATA_DIR="$DATA/db" MNEMO_LOG=warn "$BIN" serve --insecure-dev --listen "127.0.0.1:$PORT" &
PID=$!
for _ in $(seq 1 100); do curl -sf "127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.2; done
for c in 1 16; do
  echo "== $c concurrent connection(s), ${SECS}s"
  wrk -t"$(( c < 2 ? 1 : 2 ))" -c"$c" -d"${SECS}s" --latency -s scripts/search.lua "http://127.0.0.1:$PORT" | grep -E "Requests/sec|requests|p50|p95|p99|Non-2xx"
done
