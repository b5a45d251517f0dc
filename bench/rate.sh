#!/usr/bin/env bash
# Rate mode's client cost: dbtax at a fixed rate (open loop, 8 threads, 20,000 events/s by
# default) against dbtax in closed loop, on the same private MariaDB, alternately, in one go;
# sysbench --rate at the same rate and threads as a peer. Client CPU per query is the whole
# process's user + sys from /usr/bin/time, divided by the queries it ran (warm-up 0).
# Prints the ratios. A benchmark, not a test: the machine is shared, only side-by-side ratios
# mean anything.
#
#   bash bench/rate.sh [seconds per run, default 10]
#   RATE=20000 THREADS=8 CLOSED_THREADS="8 1" bash bench/rate.sh 10
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-10}
RATE=${RATE:-20000}
THREADS=${THREADS:-8}
CLOSED_THREADS=${CLOSED_THREADS:-"$THREADS 1"}
ROUNDS=${ROUNDS:-2}
# shellcheck source=bench/server.sh
source bench/server.sh
URL="mysql://root@localhost/sbtest?socket=$SOCK"

# dbtax_run THREADS [extra args] -> "queries cpu_seconds p99_ms"
dbtax_run() {
  local t=$1; shift
  local out
  out=$( { "${LOAD_PIN[@]}" /usr/bin/time -f "CPU %U %S" "$DBTAX" bench --target "$URL" --workload point-select \
      --tables 4 --threads "$t" --duration "${SECS}s" --warmup 0s --json ${DBTAX_ARGS:-} "$@"; } 2>&1 )
  echo "$out" | awk '/^CPU/ {cpu = $2 + $3} /"queries":/ {gsub(/[ ,]/, "", $2); q = $2}
    /"p99":/ && !p {gsub(/[ ,]/, "", $2); p = $2} END {print q, cpu, p}'
}
# sysbench_rate THREADS -> "queries cpu_seconds p99_ms"
sysbench_rate() {
  local out
  out=$( { "${LOAD_PIN[@]}" /usr/bin/time -f "CPU %U %S" "${SB[@]}" --threads="$1" --rate="$RATE" --time="$SECS" \
      --percentile=99 run; } 2>&1 )
  echo "$out" | awk '/queries:/ && !q {q = $2} /99th percentile:/ {p = $3} /^CPU/ {cpu = $2 + $3}
    END {print q, cpu, p}'
}

declare -A Q C P
add() { # name queries cpu p99
  Q[$1]=$(( ${Q[$1]:-0} + $2 ))
  C[$1]=$(awk -v a="${C[$1]:-0}" -v b="$3" 'BEGIN {print a + b}')
  P[$1]="${P[$1]:-} $4"
}
for _ in $(seq "$ROUNDS"); do
  read -r q c p < <(dbtax_run "$THREADS" --rate "$RATE"); add "dbtax rate $RATE/s, $THREADS thr" "$q" "$c" "$p"
  for ct in $CLOSED_THREADS; do
    read -r q c p < <(dbtax_run "$ct"); add "dbtax closed loop, $ct thr" "$q" "$c" "$p"
  done
  read -r q c p < <(sysbench_rate "$THREADS"); add "sysbench rate $RATE/s, $THREADS thr" "$q" "$c" "$p"
done

REF="dbtax rate $RATE/s, $THREADS thr"
ref_us=$(awk -v q="${Q[$REF]}" -v c="${C[$REF]}" 'BEGIN {print c * 1e6 / q}')
printf "\n%-32s %12s %14s %22s %14s\n" run "qps" "client µs/q" "rate's µs/q / this" "p99 ms (runs)"
for name in "$REF" $(for ct in $CLOSED_THREADS; do echo "dbtax closed loop, $ct thr"; done | tr ' ' '_') \
    "sysbench_rate_$RATE/s,_${THREADS}_thr"; do
  name=${name//_/ }
  awk -v n="$name" -v q="${Q[$name]}" -v c="${C[$name]}" -v secs="$SECS" -v r="$ROUNDS" \
      -v ref="$ref_us" -v p="${P[$name]}" 'BEGIN {
    us = c * 1e6 / q; printf "%-32s %12.0f %14.2f %22.2f %14s\n", n, q / (secs * r), us, ref / us, p }'
done
echo
echo "rate's µs/q / this: dbtax's client CPU per query at the fixed rate over this run's (target <= 1.10"
echo "against closed loop); sysbench's p99 is from the actual send (its --rate does not count queueing)."
