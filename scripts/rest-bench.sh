#!/usr/bin/env bash
# REST search latency under load: a release `mnemo serve` (dev mode, loopback)
# with N long-term memories for one user, driven by wrk at 1, 16 and 64
# concurrent connections (64 is past saturation on 2 cores: throughput there
# must not fall). Every request is a different query and the query cache is
# off, so every search embeds its query (set REST_BENCH_QUERY_CACHE=on to keep
# the policy's cache). Prints wrk's client-side figures and the server's own
# `took_ms`, `embed_ms` and took − embed from the response bodies, and the
# server's RSS after start and after the load. Traffic stays on 127.0.0.1;
# every run is bounded.
#
# To compare two builds, run it on each, one after the other:
#   MNEMO_BIN=/path/old/mnemo MNEMO_BENCH_POLICY=/path/old/memory_policies.toml scripts/rest-bench.sh
#   scripts/rest-bench.sh
# usage: scripts/rest-bench.sh [MEMORIES] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-10000}"; SECS="${2:-20}"; PORT=8421
BIN="${MNEMO_BIN:-target/release/mnemo}"
POLICY_SRC="${MNEMO_BENCH_POLICY:-memory_policies.toml}"
DATA="$(mktemp -d)"; PID=""
# Stop the server (and wait for it) before its data directory goes.
trap '[ -n "$PID" ] && kill $PID 2>/dev/null && wait $PID 2>/dev/null; rm -rf "$DATA"' EXIT
command -v wrk >/dev/null || { echo "wrk missing: apt-get install wrk" >&2; exit 1; }
scripts/bench-corpus.py "$N" > "$DATA/corpus.jsonl"
# The policy with the per-key rate limit off (every request of the benchmark
# comes from one dev-mode actor) and, unless asked, the query cache off.
sed -e 's/^requests_per_second_per_key = .*/requests_per_second_per_key = 0.0/' "$POLICY_SRC" > "$DATA/policy.toml"
if [ "${REST_BENCH_QUERY_CACHE:-off}" = off ]; then
  sed -i 's/^query_cache_size = .*/query_cache_size = 0/' "$DATA/policy.toml"
fi
export MNEMO_POLICY="$DATA/policy.toml"
echo "binary $BIN ($(stat -c %y "$BIN" | cut -d. -f1)), policy $POLICY_SRC, $N memories, query cache ${REST_BENCH_QUERY_CACHE:-off}"
start=$(date +%s.%N)
MNEMO_DATA_DIR="$DATA/db" MNEMO_LOG=warn "$BIN" ingest "$DATA/corpus.jsonl" >/dev/null
echo "ingest $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $start}") s"
MNEMO_DATA_DIR="$DATA/db" MNEMO_LOG=warn "$BIN" serve --insecure-dev --listen "127.0.0.1:$PORT" &
PID=$!
for _ in $(seq 1 300); do curl -sf "127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.2; done
curl -sf "127.0.0.1:$PORT/readyz" >/dev/null || { echo "the server did not become ready" >&2; exit 1; }
rss() { echo "$(( $(awk '/VmRSS/{print $2}' /proc/$PID/status) / 1024 )) MiB"; }
echo "RSS after start $(rss)"
# Warm up: the first searches load the index pages and the model's arenas.
wrk -t1 -c1 -d3s -s scripts/search.lua "http://127.0.0.1:$PORT" >/dev/null
# The server's per-stage sums and counts (/metrics), to print each run's
# mean per stage from the difference of two snapshots.
stages() { curl -sf "127.0.0.1:$PORT/metrics" | grep -E '^mnemo_search_stage_duration_seconds_(sum|count)' || true; }
for c in 1 16 64; do
  echo "== $c concurrent connection(s), ${SECS}s"
  stages > "$DATA/before"
  wrk -t"$(( c < 2 ? 1 : 2 ))" -c"$c" -d"${SECS}s" --timeout 10s --latency -s scripts/search.lua "http://127.0.0.1:$PORT" \
    | grep -E "Requests/sec|requests|^p[0-9]|server|Non-2xx"
  stages > "$DATA/after"
  awk 'FNR==NR { before[$1]=$2; next }
       { v[$1]=$2-before[$1] }
       END { printf "server stage means, ms:";
             for (k in v) if (k ~ /_sum/) { c=k; sub(/_sum/,"_count",c); split(k,a,"\""); if (v[c]>0) printf " %s %.2f", a[2], 1000*v[k]/v[c] }
             print "" }' "$DATA/before" "$DATA/after"
done
echo "RSS after the load $(rss)"
kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
