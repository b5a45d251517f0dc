#!/usr/bin/env bash
# How long does an answer of ±3 points take here? Three runs of the general log against off
# at 8 threads on the managed server, with the precision rule (a first stage of 15 blocks, then until
# the 95% interval is ±3 points or the budget ends). Prints, for each run, the blocks, the
# minutes and the half-width it reached. A benchmark, not a test: use it to choose the
# trial length and warm-up (TRIAL and WARMUP below), and quote what it prints.
#
#   bash bench/precision.sh [budget, default 3m]    TRIAL=1s WARMUP=0.25s POINTS=3 RUNS=3
set -euo pipefail
cd "$(dirname "$0")/.."
BUDGET=${1:-3m}
TRIAL=${TRIAL:-1s}
WARMUP=${WARMUP:-0.25s}
POINTS=${POINTS:-3}
RUNS=${RUNS:-3}
DBTAX=./target/release/dbtax
[ -x "$DBTAX" ] || cargo build --release
command -v jq >/dev/null || { echo "jq is missing: apt-get install jq" >&2; exit 2; }
OUT=$(mktemp -d /tmp/dbtax-precision.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

printf '%-4s %-8s %-8s %7s %9s %10s  %s\n' run trial warmup blocks minutes "±points" "overhead [95% CI]"
for i in $(seq "$RUNS"); do
  start=$(date +%s)
  "$DBTAX" run --feature general-log --threads 8 --precision "$POINTS" --budget "$BUDGET" \
    --trial "$TRIAL" --warmup "$WARMUP" --out "$OUT/$i" >/dev/null 2>"$OUT/$i.log" || true
  secs=$(( $(date +%s) - start ))
  jq -r --arg i "$i" --arg t "$TRIAL" --arg w "$WARMUP" --argjson s "$secs" '
    .cells[] | select(.variant == "general-log" and .threads == 8) | .overhead
    | "\($i)\t\($t)\t\($w)\t\(.blocks)\t\($s / 60 * 100 | round / 100)\t\((.ci95_pct[1] - .ci95_pct[0]) / 2 * 10 | round / 10)\t\(.pct * 10 | round / 10)% [\(.ci95_pct[0] * 10 | round / 10), \(.ci95_pct[1] * 10 | round / 10)]"
  ' "$OUT/$i/results.json" | awk -F'\t' '{ printf "%-4s %-8s %-8s %7s %9s %10s  %s\n", $1, $2, $3, $4, $5, $6, $7 }'
done
