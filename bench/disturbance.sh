#!/usr/bin/env bash
# The disturbance rule on a real server: the slow log against off (4 threads, 10 blocks of
# 0.5 s trials) on a private MariaDB bound to the last CPU (dbtax's load takes the others),
# twice: with the rule (default 10% of a core) and with --max-disturbance off. In each run a
# `sha256sum /dev/zero` on CPU 0 (the load's) takes the CPU from the 6th to the 9th second,
# stopped by its pid. Prints each run's table, the blocks set aside and the warnings.
# A demonstration, not a test: the machine is shared.
#
#   bash bench/disturbance.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/server.sh
source bench/server.sh
LAST=$(($(nproc --all) - 1))
taskset -acp "$LAST" "$(cat "$DIR/pid")" >/dev/null
URL="mysql://root@localhost/dbtax?socket=$SOCK"
for rule in 10 off; do
  out="$DIR/out-$rule"
  (sleep 6; taskset -c 0 sha256sum /dev/zero & h=$!; sleep 3; kill "$h") &
  hog=$!
  DBTAX_STATE_DIR="$DIR/state" "$DBTAX" run --target "$URL" --feature slow-log --threads 4 \
    --repeats 10 --trial 0.5s --warmup 0.3s --table-size 10000 --max-disturbance "$rule" \
    --out "$out" >"$out.txt" 2>&1
  wait "$hog"
  echo "== --max-disturbance $rule"
  grep -A3 '^threads' "$out.txt"
  grep -E '^warning' "$out.txt" || true
  echo "disturbed blocks: $(jq -c '[.disturbed_blocks[]? | {block, worst_pct: (.worst_pct|round)}]' "$out/results.json")"
  echo "other processes' CPU per trial, % of a core: $(jq -c '[.cells[].trials[].host_other_cpu_pct | . * 10 | round / 10]' "$out/results.json")"
done
