#!/usr/bin/env bash
# What coordinating agents costs: `dbtax bench` with N local agents (2 threads each) on a
# throwaway MariaDB, REPEATS times per N. Prints, per trial, the coordinator's own CPU (its
# reader threads included, prepare to the last report) per agent, and the messages and bytes
# exchanged with the agents. The design's target: under 1 ms of coordinator CPU per agent per
# trial. Usage: bash bench/agents.sh [REPEATS] (AGENTS="2 16 64" by default).
set -euo pipefail
cd "$(dirname "$0")/.."
REPEATS=${1:-3}
AGENTS=${AGENTS:-"2 16 64"}
DBTAX=${DBTAX:-./target/release/dbtax}
[ -x "$DBTAX" ] || cargo build --release -q
printf '%-7s %-7s %12s %14s %10s %12s %14s %9s\n' agents threads "coord ms" "coord ms/agent" messages "bytes" "bytes/agent" qps
for n in $AGENTS; do
  list=$(printf 'local,%.0s' $(seq "$n")); list=${list%,}
  for _ in $(seq "$REPEATS"); do
    "$DBTAX" bench --agents "$list" --threads $((2 * n)) --duration 3s --warmup 1s \
      --table-size 2000 --json 2>/dev/null |
      jq -r --arg n "$n" '[$n, .threads, (.coordination.cpu_us/1000), (.coordination.cpu_us/1000/($n|tonumber)),
          .coordination.messages, .coordination.bytes, (.coordination.bytes/($n|tonumber)), .qps] |
          "\(.[0])\t\(.[1])\t\(.[2]*100|round/100)\t\(.[3]*1000|round/1000)\t\(.[4])\t\(.[5])\t\(.[6]|round)\t\(.[7]|round)"' |
      awk -F'\t' '{printf "%-7s %-7s %12s %14s %10s %12s %14s %9s\n", $1, $2, $3, $4, $5, $6, $7, $8}'
  done
done
