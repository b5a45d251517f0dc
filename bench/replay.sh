#!/usr/bin/env bash
# Your own queries, measured: a capture, then its replay. sysbench's oltp_read_only (4
# threads) runs against a private MariaDB with the slow log at long_query_time = 0 (the
# capture); dbtax then replays that log against the general log and the audit plugin, the
# same statements every trial (--queries-per-trial), and prints its table with the
# statements that pay. The server is pinned to the last CPU, dbtax's load to the others.
#
#   bash bench/replay.sh [capture seconds, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-10}
# shellcheck source=bench/server.sh
source bench/server.sh
LOG=$DIR/capture-slow.log
OUT=${OUT:-$DIR/replay}
capture_slow_log "$LOG" "$SECS"
echo "captured: $(du -h "$LOG" | cut -f1) of slow log in $SECS s"
"$DBTAX" run --target "mysql://root@localhost/dbtax_replay?socket=$SOCK" --log "$LOG" --replay-user temporary \
  --feature general-log --feature audit --threads 4 --repeats "${REPEATS:-8}" \
  --queries-per-trial "${QUERIES:-40000}" --out "$OUT" ${DBTAX_ARGS:-}
if [ -n "${KEEP:-}" ]; then cp -r "$OUT" "$KEEP"; fi
