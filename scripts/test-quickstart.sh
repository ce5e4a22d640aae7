#!/usr/bin/env bash
# The README's quick start, run as written against a real server (issue 53):
# builds the `mnemo` binary (or takes $MNEMO_BIN), starts
# `mnemo serve --insecure-dev` on a free loopback port with a fresh data
# directory and the built-in policy (what `make run` gives on a fresh
# clone), takes the shell block between `<!-- quickstart:begin -->` and
# `<!-- quickstart:end -->` from README.md, and runs it with MNEMO pointing
# at that server. Every curl call is recorded (arguments, status, body), and
# each answer is checked against what the README says it is. Model assets
# come from MNEMO_ASSETS_DIR (as `make setup` leaves them).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
target="$(realpath -m "${CARGO_TARGET_DIR:-target}")"
export MNEMO_ASSETS_DIR="$(realpath -m "${MNEMO_ASSETS_DIR:-assets}")"

if [ -z "${MNEMO_BIN:-}" ]; then
  "${CARGO:-cargo}" build --quiet --bin mnemo
  MNEMO_BIN="$target/debug/mnemo"
fi

work="$(mktemp -d)"
server=""
cleanup() {
  if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# The block as the README shows it, fences dropped.
python3 - "$repo/README.md" >"$work/quickstart.sh" <<'EOF'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r"<!-- quickstart:begin -->\s*```sh\n(.*?)\n```\s*<!-- quickstart:end -->", text, re.S)
if not m:
    sys.exit("README.md has no ```sh block between <!-- quickstart:begin --> and <!-- quickstart:end -->")
print(m.group(1))
EOF

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
base="http://127.0.0.1:$port"
# Only the assets from the environment: no policy, database or Qdrant of the
# caller's, so the server is the one a fresh clone's `make run` starts.
env -i PATH="$PATH" HOME="$work" MNEMO_ASSETS_DIR="$MNEMO_ASSETS_DIR" \
  MNEMO_DATA_DIR="$work/data" MNEMO_LISTEN="127.0.0.1:$port" \
  "$MNEMO_BIN" serve --insecure-dev >"$work/server.log" 2>&1 &
server=$!
ready=""
for _ in $(seq 1 600); do
  if curl -fsS "$base/readyz" >/dev/null 2>&1; then ready=1; break; fi
  if ! kill -0 "$server" 2>/dev/null; then break; fi
  sleep 0.2
done
if [ -z "$ready" ]; then
  echo "quickstart: the server did not become ready; its log:" >&2
  cat "$work/server.log" >&2
  exit 1
fi

# Every curl of the block goes through this wrapper: it records the call's
# arguments, HTTP status and body (numbered, in order) and prints the body as
# curl would, so `ID=$(curl … | python3 …)` works as pasted.
mkdir -p "$work/calls"
# No `set -e` or `pipefail` in the block's shell: it runs as pasted into an
# interactive shell, and the checks below find what went wrong.
cat >"$work/run.sh" <<'EOF'
curl() {
  local n body
  n=$(( $(ls "$QUICKSTART_CALLS" | grep -c '\.args$' || true) + 1 ))
  n=$(printf '%02d' "$n")
  body="$QUICKSTART_CALLS/$n.body"
  printf '%s\n' "$@" >"$QUICKSTART_CALLS/$n.args"
  command curl -o "$body" -w '%{http_code}' "$@" >"$QUICKSTART_CALLS/$n.status"
  cat "$body"
}
EOF
cat "$work/quickstart.sh" >>"$work/run.sh"
echo "quickstart: running README.md's block against $base"
rc=0
MNEMO="$base" QUICKSTART_CALLS="$work/calls" timeout "${QUICKSTART_TIMEOUT_SECS:-300}" \
  bash "$work/run.sh" >"$work/stdout.txt" 2>"$work/stderr.txt" || rc=$?
if [ "$rc" -ne 0 ]; then
  if [ "$rc" -eq 124 ]; then
    echo "quickstart: the block did not finish within ${QUICKSTART_TIMEOUT_SECS:-300} s" >&2
  else
    echo "quickstart: the block failed as written (exit $rc):" >&2
  fi
  cat "$work/stderr.txt" >&2
  tail -n 20 "$work/server.log" >&2
  exit 1
fi

python3 - "$work/calls" <<'EOF'
"""Each answer of the quick start, checked against what the README says."""
import json, os, sys

calls_dir = sys.argv[1]
calls = []
for name in sorted(n for n in os.listdir(calls_dir) if n.endswith(".args")):
    stem = os.path.join(calls_dir, name[:-5])
    args = open(stem + ".args").read().splitlines()
    status = int(open(stem + ".status").read().strip() or 0)
    raw = open(stem + ".body", "rb").read()
    calls.append((args, status, raw))

failures = []
def check(ok, what, call=None):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)
        if call is not None:  # the whole answer, to see why
            print("     answer: " + calls[call][2].decode("utf-8", "replace")[:4000])

def method_url(args):
    method = args[args.index("-X") + 1] if "-X" in args else ("POST" if "-d" in args else "GET")
    url = next(a for a in args if a.startswith("http"))
    return method, url.split("/", 3)[3] if url.count("/") >= 3 else url

def body(i):
    args, status, raw = calls[i]
    assert raw.strip(), f"call {i + 1} ({' '.join(method_url(args))}) answered an empty body"
    return json.loads(raw)

seen = [method_url(a) for a, _, _ in calls]
# The erasure's status is polled until "erased" (a variable number of
# calls): keep the first and the last of that run of identical calls.
polls = [i for i, c in enumerate(seen) if c == ("GET", "v1/users/alice/erasure")]
if len(polls) > 2:
    drop = set(polls[1:-1])
    calls = [c for i, c in enumerate(calls) if i not in drop]
    seen = [c for i, c in enumerate(seen) if i not in drop]
shape = [m + " " + u.split("?")[0].split("/")[1] for m, u in seen]
expected = ["POST memories", "POST memories", "POST search", "POST context", "GET memories",
            "GET memories", "DELETE users", "GET users", "GET users"]
check(shape in (expected, expected[:-1]),
      f"the block makes the quick start's calls in order (made {len(calls)}: {seen})")
if failures:
    sys.exit(1)
for i, (args, status, raw) in enumerate(calls):
    m, u = seen[i]
    check(bool(raw.strip()), f"{m} /{u}: status {status}, a non-empty answer")

try:
    added = body(0)
    ID = added["ids"][0]
    check(calls[0][1] == 201 and len(added["ids"]) == 1, f"POST /v1/memories: 201 with one id ({ID})")
    batch = body(1)
    check(calls[1][1] == 201 and len(batch["ids"]) == 2, "POST /v1/memories (a batch of two): 201 with two ids")

    search = body(2)
    hits = search.get("hits", [])
    first = hits[0]["memory"]["text"] if hits else None
    check(calls[2][1] == 200 and first == "Alice prefers green tea",
          f"POST /v1/search \"what does alice drink?\": the tea memory first (first hit: {first!r}, {len(hits)} hits)", 2)
    check(bool(hits) and hits[0].get("breakdown") is not None, "POST /v1/search with explain: a score breakdown on the hit")

    ctx = body(3)
    text = ctx.get("text", "")
    check(calls[3][1] == 200 and "green tea" in text and ID in ctx.get("memory_ids", []),
          f"POST /v1/context \"what does alice like to drink?\": a non-empty block holding the tea memory (text: {text!r})", 3)

    listed = body(4)
    mems = listed.get("memories", [])
    check(calls[4][1] == 200 and len(mems) == 3 and all(x.get("user_id") == "alice" for x in mems),
          f"GET /v1/memories: alice's 3 memories ({len(mems)})")

    hist_url = seen[5][1]
    check(hist_url == f"v1/memories/{ID}/history", f"the history call uses the id from the first answer ({hist_url})")
    events = body(5).get("events", [])
    check(calls[5][1] == 200 and bool(events) and all(e.get("memory_id") == ID for e in events),
          f"GET /v1/memories/{{ID}}/history: its audit events ({len(events)})")

    erased = body(6)
    if calls[6][1] == 200:
        check(erased.get("erased", {}).get("memories", 0) >= 3, f"DELETE /v1/users/alice: 200, the receipt counts 3 memories ({erased.get('erased')})")
    else:
        check(calls[6][1] == 202 and "status_url" in erased, f"DELETE /v1/users/alice: 202 with a status_url ({erased})")
    status = body(len(calls) - 1)
    counts = {k: v for k, v in status.items() if isinstance(v, int) and not isinstance(v, bool) and k != "live_nodes"}
    check(calls[-1][1] == 200 and status.get("status") == "erased" and status.get("erased") is True
          and not any(counts.values()),
          f"GET /v1/users/alice/erasure: \"erased\", every count 0 ({status.get('status')}, {counts})")
except (AssertionError, KeyError, IndexError, ValueError) as e:
    check(False, f"an answer is not as the README describes it: {e!r}")

if failures:
    print(f"quickstart: {len(failures)} check(s) failed", file=sys.stderr)
    sys.exit(1)
print("quickstart: every answer is as the README describes it")
EOF
