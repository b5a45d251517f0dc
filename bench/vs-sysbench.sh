#!/usr/bin/env bash
# dbtax vs sysbench on the same private MariaDB: client CPU per query (user + sys, whole
# process, from /usr/bin/time) and QPS, at 1, 8, 32 and 128 threads, each tool run twice,
# alternately, in one go. Prints the ratios dbtax/sysbench. A benchmark, not a test: the
# machine is shared, so only ratios measured side by side mean anything.
#
#   bash bench/vs-sysbench.sh [seconds per run, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-10}
THREADS=${THREADS:-"1 8 32 128"}
# shellcheck source=bench/server.sh
source bench/server.sh

# run_sysbench THREADS -> "queries cpu_seconds"
run_sysbench() {
  local out
  out=$( { "${LOAD_PIN[@]}" /usr/bin/time -f "CPU %U %S" "${SB[@]}" --threads="$1" --time="$SECS" run; } 2>&1 )
  local q cpu
  q=$(echo "$out" | awk '/queries:/ {print $2; exit}')
  cpu=$(echo "$out" | awk '/^CPU/ {print $2 + $3}')
  echo "$q $cpu"
}
# run_dbtax THREADS -> "queries cpu_seconds"
run_dbtax() {
  local out
  out=$( { "${LOAD_PIN[@]}" /usr/bin/time -f "CPU %U %S" "$DBTAX" bench --target "mysql://root@localhost/sbtest?socket=$SOCK" \
      --workload point-select --tables 4 --threads "$1" --duration "${SECS}s" --warmup 0s --json ${DBTAX_ARGS:-}; } 2>&1 )
  local q cpu
  q=$(echo "$out" | awk -F'[:,]' '/"queries"/ {gsub(/ /,"",$2); print $2; exit}')
  cpu=$(echo "$out" | awk '/^CPU/ {print $2 + $3}')
  echo "$q $cpu"
}

printf "\n%-8s %14s %14s %14s %14s %10s %10s\n" threads "sb µs/query" "dbtax µs/query" "sb qps" "dbtax qps" "cpu ratio" "qps ratio"
for t in $THREADS; do
  sq=0; sc=0; dq=0; dc=0
  for _ in 1 2; do
    read -r q c < <(run_sysbench "$t"); sq=$((sq + q)); sc=$(awk -v a="$sc" -v b="$c" 'BEGIN {print a + b}')
    read -r q c < <(run_dbtax "$t");    dq=$((dq + q)); dc=$(awk -v a="$dc" -v b="$c" 'BEGIN {print a + b}')
  done
  awk -v t="$t" -v sq="$sq" -v sc="$sc" -v dq="$dq" -v dc="$dc" -v secs="$SECS" 'BEGIN {
    sus = sc * 1e6 / sq; dus = dc * 1e6 / dq; sqps = sq / (2 * secs); dqps = dq / (2 * secs);
    printf "%-8s %14.2f %14.2f %14.0f %14.0f %10.2f %10.2f\n", t, sus, dus, sqps, dqps, dus / sus, dqps / sqps }'
done
echo
echo "cpu ratio = dbtax client CPU per query / sysbench's (lower is better; target <= 0.6 at 32+ threads)"
echo "qps ratio = dbtax QPS / sysbench QPS (target >= 1)"
