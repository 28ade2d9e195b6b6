#!/usr/bin/env bash
# Prints the path of one of Prometheus's binaries: `promtool` (the default: the rule tests,
# deploy/prometheus/rules.spec.ts) or `prometheus` (the server: the dashboard's check,
# test/observability.e2e-spec.ts, runs one against the app). Found as $PROMTOOL or $PROMETHEUS,
# on PATH, or in Debian's prometheus package unpacked into .cache/prometheus (apt-get download
# and dpkg -x, never installed: the package's install would start a Prometheus server). Run by
# `npm test` (pretest) and .ci/run. Exits 1, saying how to get one, when there is none and the
# package cannot be had.
set -u
cd "$(dirname "$0")/.."

name="${1:-promtool}"
case "$name" in
  promtool) given="${PROMTOOL:-}" ;;
  prometheus) given="${PROMETHEUS:-}" ;;
  *) echo "usage: $0 [promtool|prometheus]" >&2; exit 2 ;;
esac
if [ -n "$given" ]; then echo "$given"; exit 0; fi
if command -v "$name" >/dev/null 2>&1; then command -v "$name"; exit 0; fi
dir="$PWD/.cache/prometheus"
[ -x "$dir/$name" ] && { echo "$dir/$name"; exit 0; }

if command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1; then
  echo "$name: unpacking Debian's prometheus package into $dir for the tests…" >&2
  mkdir -p "$dir/deb"
  fetch() { (cd "$dir/deb" && apt-get download -qq prometheus >/dev/null 2>&1); }
  # A fresh machine may have no package lists yet; only root can read them in.
  fetch || { [ "$(id -u)" = 0 ] && apt-get update -qq >/dev/null 2>&1 && fetch; }
  # Only the two binaries are kept: the web assets and the configuration are not needed.
  if ls "$dir"/deb/prometheus_*.deb >/dev/null 2>&1 &&
    dpkg -x "$dir"/deb/prometheus_*.deb "$dir/deb/root" &&
    mv "$dir/deb/root/usr/bin/promtool" "$dir/deb/root/usr/bin/prometheus" "$dir/"; then
    rm -rf "$dir/deb"
    echo "$dir/$name"
    exit 0
  fi
  rm -rf "$dir/deb"
fi

upper=$(echo "$name" | tr '[:lower:]' '[:upper:]')
cat >&2 <<MSG
$name: none found, so the tests that need it (the rule tests, the dashboard's check) will fail.
  Debian/Ubuntu: apt-get download prometheus && dpkg -x prometheus_*.deb DIR, then $upper=DIR/usr/bin/$name
  Elsewhere:     a $name from https://prometheus.io/download/ on PATH, or $upper=/path/to/$name
MSG
exit 1
