#!/usr/bin/env bash
# The memory inspector (/ui) in a real browser: headless Chromium, driven by
# Selenium WebDriver (tests/browser/test_inspector.py) against the real
# `mnemo serve` on a fresh data directory, with the real embedding model.
#
# Installs what it needs when missing: Debian's `chromium` and
# `chromium-driver` (and a CJK font, so screenshots show Chinese text) with
# apt-get (needs root, like scripts/test-postgres.sh), and the pinned
# `selenium` from PyPI into a virtualenv beside the build. Selenium is given
# the system chromedriver, so it never downloads a driver or a browser.
#
#   scripts/test-browser.sh                     # the scenarios
#   scripts/test-browser.sh --shots docs/guide/img   # and the inspector guide's screenshots
#   scripts/test-browser.sh --perf 100000       # and the first-load figures with 100k memories
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "test-browser: $*" >&2; }

if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1 \
   || ! fc-list 2>/dev/null | grep -qi "wenquanyi"; then
  if [ "$(id -u)" != 0 ]; then
    log "chromium and chromium-driver are missing and installing them needs root"
    exit 1
  fi
  log "installing chromium, chromium-driver and fonts-wqy-microhei with apt-get"
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver fonts-wqy-microhei >&2
fi

target="$(realpath -m "${CARGO_TARGET_DIR:-target}")"
venv="$target/browser-venv"
if ! "$venv/bin/python" -c "import selenium" 2>/dev/null; then
  python3 -m venv "$venv"
  # 4.52.0 needs a certifi newer than PyPI mirrors may carry; 4.51.0 does not.
  "$venv/bin/pip" install --quiet --disable-pip-version-check "selenium==4.51.0"
fi

"${CARGO:-cargo}" build --quiet --bin mnemo
# Selenium Manager stays off: the driver path is given explicitly.
export SE_OFFLINE=true
exec "$venv/bin/python" tests/browser/test_inspector.py --mnemo "$target/debug/mnemo" "$@"
