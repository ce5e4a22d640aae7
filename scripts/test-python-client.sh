#!/usr/bin/env bash
# The Python client (clients/python, package `mnemo-client`) against the real
# server: builds the `mnemo` binary, builds a wheel of the client from this
# checkout and installs it into a virtualenv beside the build (its pinned test
# dependencies from PyPI, clients/python/requirements-test.txt, installed
# once), then runs pytest, which starts `mnemo serve` on its own data
# directory with the real store, indexes and embedder (assets in
# MNEMO_ASSETS_DIR) and a local OpenAI-compatible fake model for turns,
# after mypy --strict on the package.
set -euo pipefail
cd "$(dirname "$0")/.."
target="$(realpath -m "${CARGO_TARGET_DIR:-target}")"
venv="$target/python-client-venv"
dist="$target/python-client-dist"
export MNEMO_ASSETS_DIR="$(realpath -m "${MNEMO_ASSETS_DIR:-assets}")"

"${CARGO:-cargo}" build --quiet --bin mnemo
pins=clients/python/requirements-test.txt
if ! cmp -s "$pins" "$venv/pins.txt" 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$pins"
  cp "$pins" "$venv/pins.txt"
fi
# A fresh wheel every run, so the tests exercise the client as checked out.
rm -rf "$dist"
"$venv/bin/pip" wheel --quiet --disable-pip-version-check --no-deps -w "$dist" clients/python
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --force-reinstall "$dist"/mnemo_client-*.whl

cd clients/python
# The public API is typed (models, ParamSpec-typed methods): keep it so. The
# framework adapters need their frameworks: scripts/test-python-adapters.sh
# checks them.
"$venv/bin/python" -m mypy --strict --no-incremental --exclude 'src/mnemo/integrations/' src/mnemo
MNEMO_BIN="$target/debug/mnemo" "$venv/bin/python" -m pytest -q -p no:cacheprovider tests "$@"
