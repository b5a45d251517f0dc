#!/usr/bin/env bash
# `dbtax live` against `dbtax run --at-rate` on the same private server: does the cost found on
# production's own traffic agree with the lab's at that rate? A separate process plays
# production (sysbench oltp_point_select as text on MariaDB with performance_schema on;
# pgbench -S on PostgreSQL with pg_stat_statements), its rate stepping up during the live run:
# RATE/s for the first half, then a second process adds RATE/2 more. Then `dbtax run
# --at-rate` at the live run's measured off-window rate, 4 threads, and `dbtax compare`
# prints both and the difference's interval. A measurement, not a test.
#
#   bash bench/live-vs-lab.sh mariadb|postgres [live seconds, default 180]
#   RATE=1000 bash bench/live-vs-lab.sh mariadb 240
set -euo pipefail
cd "$(dirname "$0")/.."
ENGINE=${1:?mariadb or postgres}
SECS=${2:-180}
DBTAX=./target/release/dbtax
[ -x "$DBTAX" ] || cargo build --release
DIR=$(mktemp -d /tmp/dbtax-live-vs-lab.XXXXXX)
chmod 755 "$DIR"
PIDS=()
SERVER=
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ -n "$SERVER" ]; then kill "$SERVER" 2>/dev/null || true; fi
  if [ -f "$DIR/data/postmaster.pid" ]; then kill -INT "$(head -1 "$DIR/data/postmaster.pid")" 2>/dev/null || true; fi
  sleep 2
}
trap cleanup EXIT

case $ENGINE in
  mariadb)
    RATE=${RATE:-1000}
    if [ "$(id -u)" = 0 ]; then chown mysql: "$DIR"; fi
    mariadb-install-db --no-defaults --datadir="$DIR/data" --user=mysql \
      --auth-root-authentication-method=normal > /dev/null
    mariadbd --no-defaults --datadir="$DIR/data" --socket="$DIR/sock" --skip-networking \
      --user=mysql --performance-schema=ON --pid-file="$DIR/pid" --log-error="$DIR/err" \
      > /dev/null 2>&1 &
    SERVER=$!
    for _ in $(seq 60); do [ -S "$DIR/sock" ] && break; sleep 0.5; done
    [ -S "$DIR/sock" ] || { echo "MariaDB did not start: $DIR/err" >&2; exit 1; }
    mariadb --socket="$DIR/sock" -uroot -e "CREATE DATABASE sbt"
    TARGET="mysql://root@localhost/?socket=$DIR/sock"
    FEATURE=general-log
    WORKLOAD=point-select
    SB=(sysbench oltp_point_select --db-driver=mysql --mysql-user=root
      "--mysql-socket=$DIR/sock" --mysql-db=sbt --tables=1 --table-size=10000
      --db-ps-mode=disable --report-interval=0)
    "${SB[@]}" prepare > /dev/null
    production() { # rate, seconds, delay
      bash -c 'sleep "$0"; exec "$@"' "$3" "${SB[@]}" --threads=4 "--rate=$1" "--time=$2" run \
        > "$DIR/prod-$1.log" 2>&1 &
      PIDS+=($!)
    }
    ;;
  postgres)
    RATE=${RATE:-600}
    BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
    AS=()
    if [ "$(id -u)" = 0 ]; then chown postgres: "$DIR"; AS=(runuser -u postgres --); fi
    "${AS[@]}" "$BIN/initdb" -D "$DIR/data" > /dev/null
    "${AS[@]}" "$BIN/postgres" -D "$DIR/data" -k "$DIR" -p 5497 -c listen_addresses= \
      -c shared_preload_libraries=pg_stat_statements -c logging_collector=on \
      > "$DIR/server.log" 2>&1 &
    for _ in $(seq 60); do [ -S "$DIR/.s.PGSQL.5497" ] && break; sleep 0.5; done
    [ -S "$DIR/.s.PGSQL.5497" ] || { echo "PostgreSQL did not start: $DIR/server.log" >&2; exit 1; }
    "${AS[@]}" "$BIN/psql" -h "$DIR" -p 5497 -qc "CREATE EXTENSION pg_stat_statements" postgres
    "${AS[@]}" "$BIN/pgbench" -i -s 1 -q -h "$DIR" -p 5497 postgres > /dev/null 2>&1
    TARGET="postgres://postgres@localhost:5497/postgres?host=$DIR"
    FEATURE=log-statement
    WORKLOAD=select-only
    production() { # rate, seconds, delay (pgbench ends itself after its seconds)
      bash -c 'sleep "$0"; exec "$@"' "$3" "${AS[@]}" "$BIN/pgbench" -S -c 4 -j 2 -R "$1" \
        -T "$2" -h "$DIR" -p 5497 postgres > "$DIR/prod-$1.log" 2>&1 &
      PIDS+=($!)
    }
    ;;
  *) echo "mariadb or postgres" >&2; exit 2 ;;
esac

echo "production: $RATE/s, then $((RATE + RATE / 2))/s after $((SECS / 2)) s"
# The live run reads the server as found for one window (10 s) before its windows.
production "$RATE" $((SECS + 14)) 0
production $((RATE / 2)) $((SECS / 2 + 4)) $((SECS / 2 + 10))
sleep 2
"$DBTAX" live --target "$TARGET" --feature "$FEATURE" --for "${SECS}s" --window 10s \
  --settle 2s --yes --seed 11 --out "$DIR/live" 2> /dev/null
for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
PIDS=()
AT=$(python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['live']['estimates'][0]['rate']))" "$DIR/live/results.json")
echo "lab: $FEATURE at $AT/s (the live run's off windows' rate), 4 threads"
"$DBTAX" run --target "$TARGET" --feature "$FEATURE" -w "$WORKLOAD" --at-rate "$AT" \
  --threads 4 --repeats 8 --trial 8s --out "$DIR/lab" 2> /dev/null | sed -n '3,6p'
"$DBTAX" compare "$DIR/live/results.json" "$DIR/lab/results.json" 2> /dev/null
echo "results: $DIR/live, $DIR/lab"
