#!/usr/bin/env bash
# The TypeScript client (clients/typescript, npm package `mnemo-client`)
# against the real server: builds the `mnemo` binary, starts `mnemo serve` on
# a fresh data directory (the real store, indexes and embedder; assets in
# MNEMO_ASSETS_DIR; erasures answered 202 at once, so forget-all's polling is
# exercised), installs the pinned dev dependencies (`npm ci`, from
# package-lock.json), regenerates the types from the live /openapi.json and
# fails on any difference from src/schema.d.ts, compiles with tsc and runs
# `node --test`.
#
# MNEMO_BIN=/path/to/mnemo skips the cargo build and uses that binary.
# MNEMO_UPDATE_TYPES=1 rewrites src/schema.d.ts from the live server instead
# of failing on a difference (after an API change; commit the result).
set -euo pipefail
cd "$(dirname "$0")/.."
target="$(realpath -m "${CARGO_TARGET_DIR:-target}")"
export MNEMO_ASSETS_DIR="$(realpath -m "${MNEMO_ASSETS_DIR:-assets}")"

if [ -z "${MNEMO_BIN:-}" ]; then
  "${CARGO:-cargo}" build --quiet --bin mnemo
  MNEMO_BIN="$target/debug/mnemo"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/mnemo-ts-client.XXXXXX")"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

data="$work/data"
key() { "$MNEMO_BIN" --data-dir "$data" keys create --tenant default --role "$@"; }
MNEMO_TEST_ADMIN_KEY="$(key admin)"
MNEMO_TEST_AGENT_KEY="$(key agent)"
MNEMO_TEST_USER_KEY="$(key user --user carol)"
export MNEMO_TEST_ADMIN_KEY MNEMO_TEST_AGENT_KEY MNEMO_TEST_USER_KEY

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
export MNEMO_BASE_URL="http://127.0.0.1:$port"
MNEMO_DATA_DIR="$data" MNEMO_POLICY="$PWD/memory_policies.toml" MNEMO_LISTEN="127.0.0.1:$port" \
  MNEMO_ERASURE_WAIT_SECS=0 "$MNEMO_BIN" serve >"$work/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 720); do
  if curl -fsS "$MNEMO_BASE_URL/readyz" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$server_pid" 2>/dev/null; then cat "$work/serve.log"; exit 1; fi
  sleep 0.25
done
curl -fsS "$MNEMO_BASE_URL/readyz" >/dev/null || { echo "mnemo serve not ready"; cat "$work/serve.log"; exit 1; }

cd clients/typescript
npm ci --no-audit --no-fund --loglevel=error
if [ "${MNEMO_UPDATE_TYPES:-}" = 1 ]; then npm run --silent gen:types; else npm run --silent check:types; fi
npm run --silent build
node --test --test-concurrency=1 test/*.test.mjs
