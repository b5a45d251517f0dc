#!/usr/bin/env bash
# dbtax vs pgbench on the same private PostgreSQL: client CPU per transaction (user + sys,
# whole process, from /usr/bin/time) and TPS of `dbtax bench --workload select-only` against
# `pgbench -S -M prepared` with the same clients (pgbench with -j = min(clients, cores)), at 1,
# 8, 32 and 128 clients, each tool run ROUNDS times (default 4), alternately (each first in
# every other round). Prints the ratios dbtax/pgbench: over all rounds, and each round's as a
# geometric mean with its 95% interval. A benchmark, not a test: only ratios measured side by side mean anything.
#
#   bash bench/vs-pgbench.sh [seconds per run, default 10]
#   CLIENTS="32 128" ROUNDS=8 WORKLOAD=tpcb-like bash bench/vs-pgbench.sh 4
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-10}
ROUNDS=${ROUNDS:-4}
CLIENTS=${CLIENTS:-"1 8 32 128"}
SCALE=${SCALE:-10}
DBTAX=./target/release/dbtax
[ -x "$DBTAX" ] || cargo build --release
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
[ -x "$BIN/pgbench" ] || { echo "PostgreSQL is missing: make deps" >&2; exit 2; }
# shellcheck source=bench/pin.sh
source bench/pin.sh
# shellcheck source=bench/ratios.sh
source bench/ratios.sh
# select-only (pgbench -S) or tpcb-like (pgbench's default script)
WORKLOAD=${WORKLOAD:-select-only}
case $WORKLOAD in
  select-only) PGB_SCRIPT=(-S) ;;
  tpcb-like) PGB_SCRIPT=() ;;
  simple-update) PGB_SCRIPT=(-N) ;;
  *) echo "WORKLOAD: select-only, tpcb-like or simple-update" >&2; exit 2 ;;
esac

DIR=$(mktemp -d /tmp/dbtax-pgbench.XXXXXX)
AS=()
if [ "$(id -u)" = 0 ]; then chown postgres: "$DIR"; chmod 755 "$DIR"; AS=(runuser -u postgres --); fi
PID=
cleanup() {
  # The postmaster by its pid (runuser, when it started it, does not pass SIGINT on).
  if [ -f "$DIR/data/postmaster.pid" ]; then kill -INT "$(head -1 "$DIR/data/postmaster.pid")" 2>/dev/null || true; fi
  if [ -n "$PID" ]; then wait "$PID" 2>/dev/null || true; fi
  rm -rf "$DIR"
}
trap cleanup EXIT INT TERM

"${AS[@]}" "$BIN/initdb" -D "$DIR/data" -U postgres --auth=trust --no-sync >"$DIR/initdb.log" 2>&1
"${SERVER_PIN[@]}" "${AS[@]}" "$BIN/postgres" -D "$DIR/data" -c listen_addresses= -c "unix_socket_directories=$DIR" \
  -c max_connections=600 -c shared_buffers=256MB >"$DIR/server.log" 2>&1 &
PID=$!
for _ in $(seq 300); do "$BIN/psql" -h "$DIR" -U postgres -c 'select 1' postgres >/dev/null 2>&1 && break; sleep 0.1; done
"$BIN/psql" -q -h "$DIR" -U postgres -c 'CREATE DATABASE bench' postgres
"$BIN/pgbench" -i -q -s "$SCALE" -h "$DIR" -U postgres bench >/dev/null 2>&1

# Each run prints "transactions tps cpu_seconds": the transactions for the CPU per
# transaction, the tool's own TPS (pgbench's without its connection time) for the throughput.
# run_pgbench CLIENTS
run_pgbench() {
  local j=$(( $1 < CORES ? $1 : CORES )) out
  out=$( { "${LOAD_PIN[@]}" /usr/bin/time -f "CPU %U %S" "$BIN/pgbench" "${PGB_SCRIPT[@]}" -M prepared -n -c "$1" -j "$j" -T "$SECS" \
      -h "$DIR" -U postgres bench; } 2>&1 )
  echo "$out" | awk '/actually processed:/ {q = $NF} /^tps = / && /without initial/ {r = $3} /^CPU/ {c = $2 + $3}
    END {print q, r, c}'
}
# run_dbtax CLIENTS
run_dbtax() {
  local out
  out=$( { "${LOAD_PIN[@]}" /usr/bin/time -f "CPU %U %S" "$DBTAX" bench --target "postgres://postgres@localhost/bench?host=$DIR" \
      --workload "$WORKLOAD" --threads "$1" --duration "${SECS}s" --warmup 0s --json ${DBTAX_ARGS:-}; } 2>&1 )
  # transactions = tps × the measured window
  echo "$out" | awk -F'[:,]' '/"tps"/ && !r {gsub(/ /, "", $2); r = $2} /"duration_s"/ && !d {gsub(/ /, "", $2); d = $2}
    /^CPU/ {split($0, a, " "); c = a[2] + a[3]} END {printf "%d %s %s\n", r * d, r, c}'
}

printf "\n%-8s %12s %12s %9s %9s %9s %-20s %9s %-20s\n" clients "pgbench µs/tx" "dbtax µs/tx" "pgb tps" "dbtax tps" \
  "CPU ratio" "  by round [95% CI]" "TPS ratio" "  by round [95% CI]"
for c in $CLIENTS; do
  compare_row "$c" run_pgbench run_dbtax
done
echo
echo "CPU ratio = dbtax client CPU per transaction / pgbench's (goal <= 1)"
echo "TPS ratio = dbtax TPS / pgbench TPS (goal >= 0.97); over all $ROUNDS rounds, then each round's"
echo "ratio as a geometric mean [its 95% t interval]; workload $WORKLOAD${DBTAX_ARGS:+, dbtax $DBTAX_ARGS}"
