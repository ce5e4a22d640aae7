#!/usr/bin/env bash
# A real Qdrant server (v1.18.3) for the vector-backend tests, built from the
# offline kit in ../shared/vendor/qdrant/ (no registry ships a Qdrant binary).
#
#   scripts/qdrant-server.sh build                 build once into the cache (about 50 min on 2 cores; idempotent)
#   scripts/qdrant-server.sh path                  print the cached binary's path; exit 1 when not built
#   scripts/qdrant-server.sh start [--cluster N]   start 1 (or N clustered) peers on loopback with temporary
#                                                  storage, print the gRPC URL(s), stop them all on exit (Ctrl-C)
#   scripts/qdrant-server.sh run [--cluster N] -- CMD ...
#                                                  start, run CMD with MNEMO_TEST_QDRANT_URL (the first peer's
#                                                  gRPC URL), MNEMO_TEST_QDRANT_URLS (all, space-separated) and
#                                                  MNEMO_TEST_QDRANT_PEERS (a directory with peerN/{pid,start.sh,
#                                                  http_port}, for fault tests that kill -9 and restart a peer)
#                                                  set, stop every peer, exit with CMD's status
#
# The cache lives beside the CI target directory: MNEMO_QDRANT_CACHE, default
# /var/cache/mnemo-ci/qdrant (kit sources, cargo target and bin/qdrant-1.18.3).
# The kit: MNEMO_QDRANT_KIT, default ../shared/vendor/qdrant beside the repo.
# Only loopback addresses are used; telemetry is off.
set -euo pipefail

VERSION=1.18.3
REPO="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${MNEMO_QDRANT_CACHE:-/var/cache/mnemo-ci/qdrant}"
KIT_DIR="${MNEMO_QDRANT_KIT:-$REPO/../shared/vendor/qdrant}"
KIT_TAR="$KIT_DIR/qdrant-v$VERSION-kit-src.tar.gz"
BIN="$CACHE/bin/qdrant-$VERSION"

log() { echo "qdrant-server: $*" >&2; }

build() {
  if [ -x "$BIN" ]; then
    echo "$BIN"
    return 0
  fi
  [ -f "$KIT_TAR" ] || { log "no build kit at $KIT_TAR (set MNEMO_QDRANT_KIT)"; exit 1; }
  if ! command -v protoc >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || { log "protoc missing: apt-get install protobuf-compiler"; exit 1; }
    log "installing protobuf-compiler"
    apt-get update -qq >&2 && apt-get install -y -qq protobuf-compiler >&2
  fi
  mkdir -p "$CACHE/src" "$CACHE/bin"
  if [ ! -d "$CACHE/src/qdrant-kit/qdrant" ]; then
    tar xzf "$KIT_TAR" -C "$CACHE/src"
  fi
  log "building Qdrant $VERSION (about 50 min on 2 cores; log: $CACHE/build.log)"
  local start=$SECONDS
  (
    cd "$CACHE/src/qdrant-kit/qdrant"
    export GIT_COMMIT_ID=db8fa43fcb6aedec1e739487e17a99731b74590a
    export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
    export CARGO_TARGET_DIR="$CACHE/target"
    # The kit pins its own toolchain-independent lock file; never the repo's.
    nice -n 19 cargo build --locked --release --bin qdrant -j "${JOBS:-2}"
  ) >"$CACHE/build.log" 2>&1 || { log "build failed: see $CACHE/build.log"; exit 1; }
  cp "$CACHE/target/release/qdrant" "$BIN.tmp" && mv "$BIN.tmp" "$BIN"
  log "built in $((SECONDS - start)) s: $BIN"
  echo "$BIN"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

WORK=""
stop_all() {
  [ -n "$WORK" ] || return 0
  local f pids=()
  # A peer a test restarted has a new pid: read them from the pid files.
  for f in "$WORK"/peer*/pid; do
    [ -f "$f" ] && pids+=("$(cat "$f")")
  done
  for pid in "${pids[@]:-}"; do
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]:-}"; do
    # Not our child after a restart: poll instead of wait.
    for _ in $(seq 1 50); do
      [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
  done
  rm -rf "$WORK"
}

wait_http() { # url, seconds
  local i
  for i in $(seq 1 "$2"); do
    curl -sf --max-time 2 "$1" >/dev/null 2>&1 && return 0
    sleep 1
  done
  return 1
}

# Starts N peers; fills GRPC_URLS and HTTP_URLS.
start_peers() {
  local n=$1 i http grpc p2p first_p2p=""
  [ -x "$BIN" ] || { log "not built: run scripts/qdrant-server.sh build"; exit 1; }
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/mnemo-qdrant.XXXXXX")"
  trap stop_all EXIT
  trap 'exit 130' INT TERM
  GRPC_URLS=()
  HTTP_URLS=()
  for i in $(seq 1 "$n"); do
    http=$(free_port)
    grpc=$(free_port)
    p2p=$(free_port)
    mkdir -p "$WORK/peer$i/storage" "$WORK/peer$i/snapshots"
    local args=(--disable-telemetry)
    local cluster_env=()
    if [ "$n" -gt 1 ]; then
      cluster_env=(QDRANT__CLUSTER__ENABLED=true QDRANT__CLUSTER__P2P__PORT="$p2p")
      if [ -z "$first_p2p" ]; then
        first_p2p=$p2p
        args+=(--uri "http://127.0.0.1:$p2p")
      else
        args+=(--bootstrap "http://127.0.0.1:$first_p2p" --uri "http://127.0.0.1:$p2p")
      fi
    fi
    # Each peer's start script (run again by a fault test after kill -9:
    # same ports, same storage) records the peer's pid.
    {
      echo '#!/usr/bin/env bash'
      echo "cd $(printf %q "$WORK/peer$i")"
      printf 'env RUN_MODE=production QDRANT_INIT_FILE_PATH=%q ' "$WORK/peer$i/.qdrant-initialized"
      printf 'QDRANT__SERVICE__HOST=127.0.0.1 QDRANT__SERVICE__HTTP_PORT=%s QDRANT__SERVICE__GRPC_PORT=%s ' "$http" "$grpc"
      printf 'QDRANT__STORAGE__STORAGE_PATH=%q QDRANT__STORAGE__SNAPSHOTS_PATH=%q ' "$WORK/peer$i/storage" "$WORK/peer$i/snapshots"
      printf 'QDRANT__TELEMETRY_DISABLED=true QDRANT__LOG_LEVEL=WARN '
      printf '%q ' "${cluster_env[@]}" "$BIN" "${args[@]}"
      printf '>>%q 2>&1 &\n' "$WORK/peer$i/qdrant.log"
      echo "echo \$! > $(printf %q "$WORK/peer$i/pid")"
    } >"$WORK/peer$i/start.sh"
    # On a restart the peer rejoins from its stored consensus state
    # (--bootstrap only matters the first time).
    bash "$WORK/peer$i/start.sh"
    echo "$http" >"$WORK/peer$i/http_port"
    if ! wait_http "http://127.0.0.1:$http/readyz" 90; then
      log "peer $i did not become ready; its log:"
      tail -n 30 "$WORK/peer$i/qdrant.log" >&2
      exit 1
    fi
    GRPC_URLS+=("http://127.0.0.1:$grpc")
    HTTP_URLS+=("http://127.0.0.1:$http")
  done
  if [ "$n" -gt 1 ]; then
    # Wait until the first peer sees every peer in the consensus.
    local peers=0
    for i in $(seq 1 60); do
      peers=$(curl -s --max-time 2 "${HTTP_URLS[0]}/cluster" |
        python3 -c 'import json,sys; print(len(json.load(sys.stdin)["result"]["peers"]))' 2>/dev/null || echo 0)
      [ "$peers" -ge "$n" ] && break
      sleep 1
    done
    [ "$peers" -ge "$n" ] || { log "cluster formed with $peers of $n peers"; exit 1; }
  fi
}

cmd="${1:-}"
shift || true
case "$cmd" in
  build) build ;;
  path)
    [ -x "$BIN" ] || exit 1
    echo "$BIN"
    ;;
  start | run)
    n=1
    if [ "${1:-}" = "--cluster" ]; then
      n="${2:?--cluster takes a peer count}"
      shift 2
    fi
    start_peers "$n"
    if [ "$cmd" = start ]; then
      for i in "${!GRPC_URLS[@]}"; do
        echo "peer $((i + 1)): grpc ${GRPC_URLS[$i]} rest ${HTTP_URLS[$i]}" >&2
      done
      echo "${GRPC_URLS[0]}"
      # The peers are not our children (start.sh detaches them): idle until
      # interrupted, then the EXIT trap stops them.
      while :; do sleep 1; done
    else
      [ "${1:-}" = "--" ] && shift
      [ $# -gt 0 ] || { log "run needs a command after --"; exit 2; }
      status=0
      MNEMO_TEST_QDRANT_URL="${GRPC_URLS[0]}" MNEMO_TEST_QDRANT_URLS="${GRPC_URLS[*]}" \
        MNEMO_TEST_QDRANT_REST_URL="${HTTP_URLS[0]}" MNEMO_TEST_QDRANT_PEERS="$WORK" "$@" || status=$?
      exit $status
    fi
    ;;
  *)
    sed -n '2,17p' "$0" >&2
    exit 2
    ;;
esac
