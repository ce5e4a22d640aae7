#!/usr/bin/env bash
# Drives the /v1/chat/completions proxy with the official OpenAI Python
# library (a real OpenAI client, as issue 6 asks): a virtualenv with the
# pinned `openai` package from PyPI, kept beside the build so it is made once.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="$(realpath -m "${CARGO_TARGET_DIR:-target}/openai-sdk-venv")"
if ! "$venv/bin/python" -c "import openai" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "openai==3.57.0"
fi
MNEMO_PYTHON="$venv/bin/python" "${CARGO:-cargo}" test --test integration \
  llm::the_python_openai_sdk_through_the_proxy -- --ignored --exact
