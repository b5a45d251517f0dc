#!/usr/bin/env bash
# Reading speed against the tools DBAs use to read logs: a MariaDB slow log captured at
# long_query_time = 0 under sysbench's oltp_read_only, read by pt-query-digest and by dbtax's
# dry run; a PostgreSQL log captured at log_min_duration_statement = 0 under pgbench -S, read
# by pgbadger and by dbtax's dry run. Each reader runs ROUNDS times in turn (A B A B); the
# medians, the MB/s, the ratio and dbtax's peak RSS (/usr/bin/time) are printed.
#
#   bash bench/log-read.sh [capture seconds, default 20]
#
# Needs percona-toolkit and pgbadger (apt-get install percona-toolkit pgbadger).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-20}
ROUNDS=${ROUNDS:-3}
for t in pt-query-digest pgbadger; do
  command -v $t >/dev/null || { echo "$t is missing: apt-get install percona-toolkit pgbadger" >&2; exit 2; }
done
# shellcheck source=bench/server.sh
source bench/server.sh
SLOW=$DIR/slow.log
capture_slow_log "$SLOW" "$SECS"

# PostgreSQL: a private cluster (as the postgres user when root), stopped by its pid.
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
PGDIR=$DIR/pg
mkdir -p "$PGDIR"
AS=()
if [ "$(id -u)" = 0 ]; then chown postgres: "$PGDIR"; chmod 755 "$DIR" "$PGDIR"; AS=(runuser -u postgres --); fi
"${AS[@]}" "$BIN/initdb" -D "$PGDIR/data" -U postgres --auth=trust --no-sync >"$PGDIR/initdb.log" 2>&1
"${SERVER_PIN[@]}" "${AS[@]}" "$BIN/postgres" -D "$PGDIR/data" -c listen_addresses= \
  -c "unix_socket_directories=$PGDIR" -c log_min_duration_statement=0 \
  -c "log_line_prefix=%m [%p] " >"$PGDIR/server.log" 2>&1 &
stop_pg() {
  if [ -f "$PGDIR/data/postmaster.pid" ]; then kill -INT "$(head -1 "$PGDIR/data/postmaster.pid")" 2>/dev/null || true; fi
  for _ in $(seq 100); do [ -f "$PGDIR/data/postmaster.pid" ] || break; sleep 0.1; done
  cleanup
}
trap stop_pg EXIT INT TERM
for _ in $(seq 300); do "$BIN/psql" -h "$PGDIR" -U postgres -c 'select 1' postgres >/dev/null 2>&1 && break; sleep 0.1; done
"$BIN/pgbench" -i -q -s 10 -h "$PGDIR" -U postgres postgres >/dev/null 2>&1
: > "$PGDIR/server.log"
"${LOAD_PIN[@]}" "$BIN/pgbench" -S -n -c 4 -j 1 -T "$SECS" -h "$PGDIR" -U postgres postgres >/dev/null
PGLOG=$DIR/postgresql.log
cp "$PGDIR/server.log" "$PGLOG"

secs() { # the wall seconds of a command, its output thrown away
  local t0 t1
  t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
compare() { # name log peer-command…
  local name=$1 log=$2; shift 2
  local mb a=() b=() rss
  mb=$(echo "$(stat -c %s "$log") / 1048576" | bc -l)
  for _ in $(seq "$ROUNDS"); do
    a+=("$(secs "${LOAD_PIN[@]}" "$@" "$log")")
    b+=("$(secs "${LOAD_PIN[@]}" "$DBTAX" run --log "$log" --feature general-log --dry-run \
      --max-statements 100000000 --replay-user temporary --target "$TARGET")")
  done
  local ma mbx
  ma=$(printf '%s\n' "${a[@]}" | median); mbx=$(printf '%s\n' "${b[@]}" | median)
  # Once more, for dbtax's peak RSS and what it read (a dry run that refused would be fast).
  /usr/bin/time -o "$DIR/rss" -f '%M' "$DBTAX" run --log "$log" --feature general-log --dry-run \
      --max-statements 100000000 --replay-user temporary --target "$TARGET" >"$DIR/dry.txt" 2>&1 \
    || { echo "dbtax's dry run of $log failed:" >&2; cat "$DIR/dry.txt" >&2; exit 1; }
  rss=$(tail -1 "$DIR/rss")
  grep -m1 '^  replay ' "$DIR/dry.txt" | cut -c1-110
  printf '%-9s %7.1f MB  %-16s %7.2f s (%6.1f MB/s)  dbtax %6.2f s (%6.1f MB/s)  ×%.1f  dbtax peak RSS %d MB\n' \
    "$name" "$mb" "$1" "$ma" "$(echo "$mb / $ma" | bc -l)" "$mbx" "$(echo "$mb / $mbx" | bc -l)" \
    "$(echo "$ma / $mbx" | bc -l)" "$((rss / 1024))"
}
echo "medians of $ROUNDS runs each, in turn; readers on the load's CPUs"
TARGET="mysql://root@localhost/sbtest?socket=$SOCK"
compare slow "$SLOW" pt-query-digest
TARGET="postgres://postgres@/postgres?host=$PGDIR"
# (pgbadger replaces its output file: never give it /dev/null.)
compare postgres "$PGLOG" pgbadger -q -x text -o "$DIR/pgbadger.txt" --prefix "%m [%p] "
