#!/usr/bin/env bash
# Prints the path of a promtool, Prometheus's rule checker, for the rule tests
# (deploy/prometheus/rules.spec.ts): $PROMTOOL, one on PATH, or Debian's prometheus package
# unpacked into .cache/prometheus (apt-get download and dpkg -x, never installed: the package's
# install would start a Prometheus server). Run by `npm test` (pretest) and .ci/run.
# Exits 1, saying how to get one, when there is none and the package cannot be had.
set -u
cd "$(dirname "$0")/.."

if [ -n "${PROMTOOL:-}" ]; then echo "$PROMTOOL"; exit 0; fi
if command -v promtool >/dev/null 2>&1; then command -v promtool; exit 0; fi
dir="$PWD/.cache/prometheus"
tool="$dir/promtool"
[ -x "$tool" ] && { echo "$tool"; exit 0; }

if command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1; then
  echo "promtool: unpacking Debian's prometheus package into $dir for the rule tests…" >&2
  mkdir -p "$dir/deb"
  fetch() { (cd "$dir/deb" && apt-get download -qq prometheus >/dev/null 2>&1); }
  # A fresh machine may have no package lists yet; only root can read them in.
  fetch || { [ "$(id -u)" = 0 ] && apt-get update -qq >/dev/null 2>&1 && fetch; }
  # Only promtool is kept: the package's server, web assets and configuration are not needed.
  if ls "$dir"/deb/prometheus_*.deb >/dev/null 2>&1 &&
    dpkg -x "$dir"/deb/prometheus_*.deb "$dir/deb/root" &&
    mv "$dir/deb/root/usr/bin/promtool" "$tool"; then
    rm -rf "$dir/deb"
    echo "$tool"
    exit 0
  fi
  rm -rf "$dir/deb"
fi

cat >&2 <<MSG
promtool: none found, so the rule tests (deploy/prometheus/rules.spec.ts) will fail.
  Debian/Ubuntu: apt-get download prometheus && dpkg -x prometheus_*.deb DIR, then PROMTOOL=DIR/usr/bin/promtool
  Elsewhere:     a promtool from https://prometheus.io/download/ on PATH, or PROMTOOL=/path/to/promtool
MSG
exit 1
