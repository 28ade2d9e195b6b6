#!/usr/bin/env bash
# Makes sure the headless browser of the dashboard test (test/dashboard.e2e-spec.ts) is there:
# Debian's chromium at /usr/bin/chromium (or CHROMIUM_PATH), driven by playwright-core, which
# downloads no browser of its own. Installs the Debian package when it is missing and this runs
# as root with apt-get (as CI does); otherwise says how. Run by `npm test` (pretest) and .ci/run.
# Exits 1 only when an install was tried and failed.
set -u

browser=${CHROMIUM_PATH:-/usr/bin/chromium}
[ -x "$browser" ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "browser: $browser is missing; installing Debian's chromium for the dashboard test…" >&2
  export DEBIAN_FRONTEND=noninteractive
  if apt-get update -qq && apt-get install -y -qq chromium >/dev/null; then
    [ -x "$browser" ] && { echo "browser: $("$browser" --version 2>/dev/null)" >&2; exit 0; }
  fi
  echo "browser: installing chromium failed; the dashboard test (test/dashboard.e2e-spec.ts) will fail" >&2
  exit 1
fi

cat >&2 <<MSG
browser: no Chromium at $browser, so the dashboard test (test/dashboard.e2e-spec.ts) will fail.
  Debian/Ubuntu: sudo apt-get install -y chromium
  Elsewhere:     point CHROMIUM_PATH at a Chromium or Chrome binary.
MSG
exit 0
