#!/usr/bin/env bash
# The Python client's framework adapters (clients/python/src/mnemo/integrations)
# against the real server, each through its framework's own API: LangGraph's
# BaseStore and the OpenAI Agents SDK's Session in one virtualenv
# (clients/python/requirements-adapters.txt), CrewAI's memory storage in
# another (requirements-crewai.txt: crewai needs openai<3, the Agents SDK
# openai>=3). Both are installed from PyPI at pinned versions, once (again
# when the pins change), beside the build; the client is built as a wheel
# from this checkout every run. pytest starts `mnemo serve` on its own data
# directories (tests/conftest.py); mypy --strict checks the adapters.
#
# MNEMO_BIN=/path/to/mnemo skips the cargo build and uses that binary.
set -euo pipefail
cd "$(dirname "$0")/.."
target="$(realpath -m "${CARGO_TARGET_DIR:-target}")"
dist="$target/python-adapters-dist"
export MNEMO_ASSETS_DIR="$(realpath -m "${MNEMO_ASSETS_DIR:-assets}")"

if [ -z "${MNEMO_BIN:-}" ]; then
  "${CARGO:-cargo}" build --quiet --bin mnemo
  MNEMO_BIN="$target/debug/mnemo"
fi
export MNEMO_BIN

# A fresh wheel every run (below), so the tests exercise the client as checked out.
rm -rf "$dist"

# venv name, pins file, the test files it runs, the adapters it type-checks.
run_suite() {
  local name="$1" pins="clients/python/$2" tests="$3" modules="$4"
  local venv="$target/python-$name-venv"
  if ! cmp -s "$pins" "$venv/pins.txt" 2>/dev/null; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    local t0=$SECONDS
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$pins"
    cp "$pins" "$venv/pins.txt"
    echo "$name: installed the pinned dependencies in $((SECONDS - t0)) s ($(du -sh "$venv" | cut -f1))"
  fi
  if [ ! -d "$dist" ]; then
    "$venv/bin/pip" wheel --quiet --disable-pip-version-check --no-deps -w "$dist" clients/python
  fi
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --force-reinstall "$dist"/mnemo_client-*.whl
  (
    cd clients/python
    # shellcheck disable=SC2086
    "$venv/bin/python" -m mypy --strict --no-incremental --follow-imports=silent $modules
    # shellcheck disable=SC2086
    "$venv/bin/python" -m pytest -q -p no:cacheprovider $tests
  )
}

run_suite adapters requirements-adapters.txt \
  "tests_integrations/test_langgraph.py tests_integrations/test_openai_agents.py tests_integrations/test_restart.py" \
  "src/mnemo/integrations/langgraph.py src/mnemo/integrations/openai_agents.py"
run_suite crewai requirements-crewai.txt \
  "tests_integrations/test_crewai.py" \
  "src/mnemo/integrations/crewai.py"
