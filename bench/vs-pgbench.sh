#!/usr/bin/env bash
# dbtax vs pgbench on the same private PostgreSQL: client CPU per transaction (user + sys,
# whole process, from /usr/bin/time) and TPS of `dbtax bench --workload select-only` against
# `pgbench -S -M prepared` with the same clients (pgbench with -j = min(clients, cores)), at 1,
# 8, 32 and 128 clients, each tool run twice, alternately, in one go. Prints the ratios
# dbtax/pgbench. A benchmark, not a test: only ratios measured side by side mean anything.
#
#   bash bench/vs-pgbench.sh [seconds per run, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-10}
CLIENTS=${CLIENTS:-"1 8 32 128"}
SCALE=${SCALE:-10}
DBTAX=./target/release/dbtax
[ -x "$DBTAX" ] || cargo build --release
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
[ -x "$BIN/pgbench" ] || { echo "PostgreSQL is missing: make deps" >&2; exit 2; }
# shellcheck source=bench/pin.sh
source bench/pin.sh
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

# run_pgbench CLIENTS -> "transactions cpu_seconds"
run_pgbench() {
  local j=$(( $1 < CORES ? $1 : CORES )) out
  out=$( { "${LOAD_PIN[@]}" /usr/bin/time -f "CPU %U %S" "$BIN/pgbench" "${PGB_SCRIPT[@]}" -M prepared -n -c "$1" -j "$j" -T "$SECS" \
      -h "$DIR" -U postgres bench; } 2>&1 )
  echo "$(echo "$out" | awk '/actually processed:/ {print $NF; exit}') $(echo "$out" | awk '/^CPU/ {print $2 + $3}')"
}
# run_dbtax CLIENTS -> "transactions cpu_seconds"
run_dbtax() {
  local out
  out=$( { "${LOAD_PIN[@]}" /usr/bin/time -f "CPU %U %S" "$DBTAX" bench --target "postgres://postgres@localhost/bench?host=$DIR" \
      --workload "$WORKLOAD" --threads "$1" --duration "${SECS}s" --warmup 0s --json ${DBTAX_ARGS:-}; } 2>&1 )
  # transactions = tps × the measured window
  echo "$(echo "$out" | awk -F'[:,]' '/"tps"/ && !t {gsub(/ /,"",$2); t = $2} /"duration_s"/ && !d {gsub(/ /,"",$2); d = $2}
    END {printf "%d", t * d}') $(echo "$out" | awk '/^CPU/ {print $2 + $3}')"
}

printf "\n%-8s %15s %15s %12s %12s %10s %10s\n" clients "pgbench µs/tx" "dbtax µs/tx" "pgbench tps" "dbtax tps" "cpu ratio" "tps ratio"
for c in $CLIENTS; do
  pq=0; pc=0; dq=0; dc=0
  for _ in 1 2; do
    read -r q t < <(run_pgbench "$c"); pq=$((pq + q)); pc=$(awk -v a="$pc" -v b="$t" 'BEGIN {print a + b}')
    read -r q t < <(run_dbtax "$c");   dq=$((dq + q)); dc=$(awk -v a="$dc" -v b="$t" 'BEGIN {print a + b}')
  done
  awk -v c="$c" -v pq="$pq" -v pc="$pc" -v dq="$dq" -v dc="$dc" -v secs="$SECS" 'BEGIN {
    pus = pc * 1e6 / pq; dus = dc * 1e6 / dq; ptps = pq / (2 * secs); dtps = dq / (2 * secs);
    printf "%-8s %15.2f %15.2f %12.0f %12.0f %10.2f %10.2f\n", c, pus, dus, ptps, dtps, dus / pus, dtps / ptps }'
done
echo
echo "cpu ratio = dbtax client CPU per transaction / pgbench's (target <= 1)"
echo "tps ratio = dbtax TPS / pgbench TPS (target >= 1); workload $WORKLOAD${DBTAX_ARGS:+, dbtax $DBTAX_ARGS}"
