#!/usr/bin/env bash
# Does the scheduler get into the number? The slow log and the general log against off at 4
# and 16 threads on the managed MariaDB (point selects, 12 blocks of 1 s trials), run free
# (--no-pin: server and load share every core) and pinned (the default: the server on one
# half of the CPUs, the load on the other), alternating, RUNS times each; then PostgreSQL's
# statement log and duration log the same way (pgbench's select-only, 10 blocks, once each).
# Prints one markdown row per run: the overhead at 4 and 16 threads and the extra server CPU
# per query at 16. A benchmark, not a test: quote what it prints.
#
#   bash bench/pinning.sh            RUNS=2 BLOCKS=12 PG_BLOCKS=10
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-2}
BLOCKS=${BLOCKS:-12}
PG_BLOCKS=${PG_BLOCKS:-10}
DBTAX=./target/release/dbtax
[ -x "$DBTAX" ] || cargo build --release
command -v jq >/dev/null || { echo "jq is missing: apt-get install jq" >&2; exit 2; }
OUT=$(mktemp -d /tmp/dbtax-pinning.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

# One row: | how | a@4 | b@4 | a@16 | b@16 | Δ CPU @16 (a, b) |
row() {
  local how=$1 dir=$2 a=$3 b=$4
  jq -r --arg how "$how" --arg a "$a" --arg b "$b" '
    def ci: "\(.pct * 10 | round / 10)% [\(.ci95_pct[0] * 10 | round / 10), \(.ci95_pct[1] * 10 | round / 10)]";
    def cell($v; $t): .cells[] | select(.variant == $v and .threads == $t);
    def cpu($v): cell($v; 16) | .server_cpu_delta_us | if . == null then "–" else "\(.value * 10 | round / 10)" end;
    "| \($how) | \(cell($a; 4).overhead | ci) | \(cell($b; 4).overhead | ci) | \(cell($a; 16).overhead | ci) | \(cell($b; 16).overhead | ci) | \(cpu($a)), \(cpu($b)) µs |"
  ' "$dir/results.json"
}

echo "MariaDB $(mariadbd --version 2>/dev/null | awk '{print $3}'), $(nproc) cores, $BLOCKS blocks of 1 s trials"
echo
echo "| | slow log @4 | general log @4 | slow log @16 | general log @16 | Δ server CPU @16 (slow, general) |"
echo "|---|---|---|---|---|---|"
for i in $(seq "$RUNS"); do
  for how in free pinned; do
    pin=(); [ "$how" = free ] && pin=(--no-pin)
    "$DBTAX" run --feature slow-log --feature general-log --threads 4,16 --repeats "$BLOCKS" \
      --trial 1s "${pin[@]}" --out "$OUT/my-$how-$i" >/dev/null 2>"$OUT/my-$how-$i.log" \
      || { cat "$OUT/my-$how-$i.log" >&2; exit 1; }
    row "$how, run $i" "$OUT/my-$how-$i" slow-log general-log
  done
done
echo
echo "PostgreSQL, pgbench select-only, $PG_BLOCKS blocks"
echo
echo "| | log_min_duration_statement = 0 @4 | log_statement = 'all' @4 | log_min_duration_statement = 0 @16 | log_statement = 'all' @16 | Δ server CPU @16 (duration, statement) |"
echo "|---|---|---|---|---|---|"
for how in free pinned; do
  pin=(); [ "$how" = free ] && pin=(--no-pin)
  "$DBTAX" run --target managed:postgres --workload select-only --feature log-min-duration \
    --feature log-statement --threads 4,16 --repeats "$PG_BLOCKS" --trial 1s "${pin[@]}" \
    --out "$OUT/pg-$how" >/dev/null 2>"$OUT/pg-$how.log" || { cat "$OUT/pg-$how.log" >&2; exit 1; }
  row "$how" "$OUT/pg-$how" log-min-duration log-statement
done
