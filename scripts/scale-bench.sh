#!/usr/bin/env bash
# One node at scale (issue 15): USERS users with PER_USER long-term memories
# each plus REFERENCE reference chunks (default 100,000 × 8 + 200,000: a
# million memories), on the embedded defaults (SQLite + qdrant-edge + tantivy,
# the default model, multilingual-e5-small, unless MNEMO_EMBEDDING_MODEL names
# another), release binary, wrk on loopback. Reports, in order:
#   - ingest time (`mnemo ingest`) and the data directory's size per store;
#   - start-up time to /readyz after the ingest, RSS after start;
#   - REST `POST /v1/search` for a random user at 1 and 16 connections:
#     client p50/p95/p99, req/s, and the server's own took_ms (the in-process
#     search) and embed_ms (scripts/search.lua); the peak RSS under load;
#   - forget-all of one user (DELETE /v1/users/{id}: status and time);
#   - restart after a clean shutdown, and after kill -9;
#   - the weekly cleanup (`mnemo jobs run weekly-cleanup`, server stopped).
# Run it at 100k and at 1M to see whether a user's search cost depends on
# how many other users exist:
#   scripts/scale-bench.sh 10000 8 20000      # 100k
#   scripts/scale-bench.sh                    # 1M
# usage: scripts/scale-bench.sh [USERS] [PER_USER] [REFERENCE] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
USERS="${1:-100000}"; PER="${2:-8}"; REF="${3:-200000}"; SECS="${4:-20}"; PORT=8441
BIN="$(realpath "${MNEMO_BIN:-target/release/mnemo}")"
WORK="${SCALE_BENCH_DIR:-$(mktemp -d)}"; PID=""; PEAK=""
trap '[ -n "$PID" ] && kill $PID 2>/dev/null; [ -n "$PEAK" ] && kill $PEAK 2>/dev/null; [ -z "${SCALE_BENCH_KEEP:-}" ] && rm -rf "$WORK"' EXIT
command -v wrk >/dev/null || { echo "wrk missing: apt-get install wrk" >&2; exit 1; }
mkdir -p "$WORK"
sed -e 's/^requests_per_second_per_key = .*/requests_per_second_per_key = 0.0/' \
    -e 's/^query_cache_size = .*/query_cache_size = 0/' memory_policies.toml > "$WORK/policy.toml"
export MNEMO_POLICY="$WORK/policy.toml" MNEMO_DATA_DIR="$WORK/db" MNEMO_LOG=warn BENCH_USERS="$USERS"

now() { date +%s.%N; }
since() { awk "BEGIN{printf \"%.2f\", $(now) - $1}"; }
# VmRSS, and its anonymous part (heap) against file pages mapped in (the
# indexes' mmapped files: page cache the kernel can reclaim); then PSS, which
# counts a page mapped twice once: qdrant-edge maps a segment's vector file
# twice (sequential reads and random reads), so under load VmRSS counts the
# vectors' pages two times.
rss() { awk '/VmRSS/{t=$2} /RssAnon/{a=$2} /RssFile/{f=$2} END{printf "%d MiB (anon %d, file %d)", t/1024, a/1024, f/1024}' /proc/$PID/status;
        awk '/^Pss:/{printf ", PSS %d MiB", $2/1024}' /proc/$PID/smaps_rollup; }
pss_kb() { awk '/^Pss:/{print $2}' /proc/$PID/smaps_rollup 2>/dev/null || echo 0; }
start_server() {
  local t; t=$(now)
  "$BIN" serve --insecure-dev --listen "127.0.0.1:$PORT" &
  PID=$!
  for _ in $(seq 1 1200); do curl -sf "127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.1; done
  curl -sf "127.0.0.1:$PORT/readyz" >/dev/null || { echo "the server did not become ready" >&2; exit 1; }
  echo "$1 $(since "$t") s, RSS $(rss)"
}
stop_server() { kill -TERM "$PID"; wait "$PID" || true; PID=""; }

echo "binary $BIN ($(stat -c %y "$BIN" | cut -d. -f1)); $USERS users × $PER + $REF reference = $(( USERS * PER + REF )) memories"
if [ ! -d "$WORK/db" ]; then
  scripts/bench-corpus.py scale "$USERS" "$PER" "$REF" > "$WORK/corpus.jsonl"
  t=$(now)
  "$BIN" ingest "$WORK/corpus.jsonl"
  echo "ingest (wall, including open and optimize) $(since "$t") s"
  rm "$WORK/corpus.jsonl"
fi
du -sh "$WORK/db" "$WORK/db"/* 2>/dev/null | sed 's/^/disk /'

# The server's per-stage sums and counts (/metrics): each run's mean per
# stage from the difference of two snapshots.
stages() { curl -sf "127.0.0.1:$PORT/metrics" | grep -E '^mnemo_search_stage_duration_seconds_(sum|count)' || true; }
stage_means() {
  awk 'FNR==NR { before[$1]=$2; next }
       { v[$1]=$2-before[$1] }
       END { printf "server stage means, ms:";
             for (k in v) if (k ~ /_sum/) { c=k; sub(/_sum/,"_count",c); split(k,a,"\""); if (v[c]>0) printf " %s %.2f", a[2], 1000*v[k]/v[c] }
             print "" }' "$1" "$2"
}

start_server "start-up to ready"
wrk -t1 -c1 -d3s -s scripts/search.lua "http://127.0.0.1:$PORT" >/dev/null
for c in 1 16; do
  echo "== search, random user, $c connection(s), ${SECS}s"
  stages > "$WORK/before"
  ( max=0; maxp=0; while kill -0 "$PID" 2>/dev/null; do r=$(awk '/VmRSS/{print $2}' /proc/$PID/status 2>/dev/null || echo 0); p=$(pss_kb); [ "$r" -gt "$max" ] && max=$r && echo "$max" > "$WORK/peak"; [ "${p:-0}" -gt "$maxp" ] && maxp=$p && echo "$maxp" > "$WORK/peak-pss"; sleep 0.5; done ) & PEAK=$!
  wrk -t"$(( c < 2 ? 1 : 2 ))" -c"$c" -d"${SECS}s" --timeout 10s --latency -s scripts/search.lua "http://127.0.0.1:$PORT" \
    | grep -E "Requests/sec|requests|^p[0-9]|server|Non-2xx"
  kill $PEAK 2>/dev/null || true; PEAK=""
  stages > "$WORK/after"; stage_means "$WORK/before" "$WORK/after"
  echo "peak RSS under load $(( $(cat "$WORK/peak") / 1024 )) MiB, peak PSS $(( $(cat "$WORK/peak-pss") / 1024 )) MiB"
done

# SCALE_BENCH_VICTIM: another user on a kept deployment, whose default
# victim is already erased.
victim="${SCALE_BENCH_VICTIM:-u$(( USERS / 2 ))}"
t=$(now)
code=$(curl -s -o "$WORK/receipt.json" -w '%{http_code}' -X DELETE "127.0.0.1:$PORT/v1/users/$victim")
echo "forget-all of one user ($PER memories): HTTP $code in $(since "$t") s"
# A 202 answers before the erasure ends: poll its status until it is done.
if [ "$code" = 202 ]; then
  while curl -sf "127.0.0.1:$PORT/v1/users/$victim/erasure" | grep -q '"status":"in_progress"'; do sleep 0.05; done
fi
echo "forget-all: erased $(curl -sf "127.0.0.1:$PORT/v1/users/$victim/erasure" | grep -o '"erased":[a-z]*') after $(since "$t") s"
stop_server
start_server "restart after a clean shutdown"
kill -9 "$PID"; wait "$PID" 2>/dev/null || true; PID=""
start_server "restart after kill -9"
stop_server
t=$(now)
"$BIN" jobs run weekly-cleanup
echo "weekly cleanup $(since "$t") s"
