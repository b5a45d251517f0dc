#!/usr/bin/env bash
# The pictures in README.md and docs/, from runs of the current code, taken in headless
# Chromium: docs/report.png (a real `dbtax demo --quick` on a throwaway MariaDB) and
# docs/replay.png (a captured slow log replayed against the general log and the audit
# plugin, bench/replay.sh). Rerun it after a change to the report:
#
#   bash docs/pictures.sh [report|replay]   (default: both)
set -euo pipefail
WHICH=${1:-all}
cd "$(dirname "$0")/.."
cargo build --release -q
DBTAX=$PWD/target/release/dbtax
WORK=$(mktemp -d /tmp/dbtax-pictures.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
CHROMIUM=$(command -v chromium || command -v chromium-browser || command -v google-chrome)

shot() { # report.html → png
  "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$WORK/profile" --window-size=1200,1800 \
    --screenshot="$2" "file://$1" 2>/dev/null
  echo "wrote $2"
}

if [ "$WHICH" != replay ]; then
  "$DBTAX" demo --quick --out "$WORK/demo"
  shot "$WORK/demo/report.html" docs/report.png
fi
if [ "$WHICH" != report ]; then
  OUT=$WORK/replay REPEATS=4 QUERIES=20000 bash bench/replay.sh 5
  shot "$WORK/replay/report.html" docs/replay.png
fi
