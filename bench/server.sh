# Sourced by the benchmarks: build dbtax if needed, start a private MariaDB on a unix socket
# in a temporary folder (stopped by its pid and removed at exit), and prepare sbtest with
# sysbench (4 × 100,000 rows). Sets DBTAX, DIR, SOCK, SB (sysbench's point-select command) and
# LOAD_PIN (the prefix that runs a client on the load's CPUs).
DBTAX=./target/release/dbtax
[ -x "$DBTAX" ] || cargo build --release
command -v sysbench >/dev/null || { echo "sysbench is missing: make deps" >&2; exit 2; }
MARIADBD=$(command -v mariadbd || echo /usr/sbin/mariadbd)
# shellcheck source=bench/pin.sh
source bench/pin.sh

DIR=$(mktemp -d /tmp/dbtax-bench.XXXXXX)
SOCK=$DIR/mysqld.sock
USER_OPT=$([ "$(id -u)" = 0 ] && echo --user=root || true)
cleanup() {
  if [ -f "$DIR/pid" ]; then kill "$(cat "$DIR/pid")" 2>/dev/null || true; fi
  for _ in $(seq 100); do [ -e "$SOCK" ] || break; sleep 0.1; done
  rm -rf "$DIR"
}
trap cleanup EXIT INT TERM

mariadb-install-db --no-defaults --datadir="$DIR/data" --auth-root-authentication-method=normal \
  --skip-test-db $USER_OPT >"$DIR/install.log" 2>&1
"${SERVER_PIN[@]}" "$MARIADBD" --no-defaults --datadir="$DIR/data" --socket="$SOCK" --skip-networking \
  --pid-file="$DIR/pid" --log-error="$DIR/error.log" --innodb-buffer-pool-size=256M \
  --max-connections=2000 $USER_OPT &
for _ in $(seq 300); do mariadb -S "$SOCK" -uroot -e 'select 1' >/dev/null 2>&1 && break; sleep 0.1; done
mariadb -S "$SOCK" -uroot -e 'CREATE DATABASE sbtest'
# --rand-type=uniform: dbtax draws ids uniformly (sysbench 1.1's default); Debian's sysbench
# 1.0.20 defaults to 'special' (75% of the draws on 1% of the rows: hotter caches in the
# server, measured 8-14% more QPS than uniform here), which would compare different work.
# SB_ARGS adds to or overrides it (SB_ARGS=--rand-type=special).
# shellcheck disable=SC2206
SB=(sysbench oltp_point_select --db-driver=mysql --mysql-socket="$SOCK" --mysql-user=root
    --mysql-db=sbtest --tables=4 --table-size=100000 --rand-type=uniform ${SB_ARGS:-})
"${SB[@]}" prepare >/dev/null

# capture_slow_log FILE SECONDS: sysbench's oltp_read_only (4 threads) for SECONDS through the
# slow log at long_query_time = 0 into FILE, then the slow log off again.
capture_slow_log() {
  mariadb -S "$SOCK" -uroot -e "SET GLOBAL slow_query_log_file = '$1'; \
    SET GLOBAL long_query_time = 0; SET GLOBAL slow_query_log = ON"
  "${LOAD_PIN[@]}" sysbench oltp_read_only --db-driver=mysql --mysql-socket="$SOCK" \
    --mysql-user=root --mysql-db=sbtest --tables=4 --table-size=100000 --threads=4 \
    --time="$2" run >/dev/null
  mariadb -S "$SOCK" -uroot -e "SET GLOBAL slow_query_log = OFF; SET GLOBAL long_query_time = 10"
}
