#!/usr/bin/env bash
# dbtax vs sysbench on the same private MariaDB: client CPU per query (user + sys, whole
# process, from /usr/bin/time) and QPS, at 1, 8, 32 and 128 threads, each tool run ROUNDS
# times (default 4), alternately (each first in every other round), in one go. Prints the
# ratios dbtax/sysbench: over all rounds, and each round's as a geometric mean with its 95%
# interval. A benchmark, not a test: the machine is shared, so only ratios measured side by
# side mean anything.
#
#   bash bench/vs-sysbench.sh [seconds per run, default 10]
#   THREADS="32 128" ROUNDS=8 bash bench/vs-sysbench.sh 4
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-10}
ROUNDS=${ROUNDS:-4}
THREADS=${THREADS:-"1 8 32 128"}
# shellcheck source=bench/server.sh
source bench/server.sh
# shellcheck source=bench/ratios.sh
source bench/ratios.sh

# Each run prints "queries qps cpu_seconds": the queries for the CPU per query, the tool's own
# QPS (over the time it measured) for the throughput.
# run_sysbench THREADS
run_sysbench() {
  local out
  out=$( { "${LOAD_PIN[@]}" /usr/bin/time -f "CPU %U %S" "${SB[@]}" --threads="$1" --time="$SECS" run; } 2>&1 )
  echo "$out" | awk '/queries:/ && !q {q = $2; r = $3; gsub(/\(/, "", r)} /^CPU/ {c = $2 + $3} END {print q, r, c}'
}
# run_dbtax THREADS
run_dbtax() {
  local out
  out=$( { "${LOAD_PIN[@]}" /usr/bin/time -f "CPU %U %S" "$DBTAX" bench --target "mysql://root@localhost/sbtest?socket=$SOCK" \
      --workload point-select --tables 4 --threads "$1" --duration "${SECS}s" --warmup 0s --json ${DBTAX_ARGS:-}; } 2>&1 )
  echo "$out" | awk -F'[:,]' '/"queries"/ && !q {gsub(/ /, "", $2); q = $2} /"qps"/ && !r {gsub(/ /, "", $2); r = $2}
    /^CPU/ {split($0, a, " "); c = a[2] + a[3]} END {print q, r, c}'
}

printf "\n%-8s %12s %12s %9s %9s %9s %-20s %9s %-20s\n" threads "sb µs/q" "dbtax µs/q" "sb qps" "dbtax qps" \
  "CPU ratio" "  by round [95% CI]" "QPS ratio" "  by round [95% CI]"
for t in $THREADS; do
  compare_row "$t" run_sysbench run_dbtax
done
echo
echo "CPU ratio = dbtax client CPU per query / sysbench's (goal <= 0.80 at 32 and 128 threads)"
echo "QPS ratio = dbtax QPS / sysbench QPS (goal >= 1); over all $ROUNDS rounds, then each round's"
echo "ratio as a geometric mean [its 95% t interval]. sysbench draws ids uniformly, as dbtax does."
