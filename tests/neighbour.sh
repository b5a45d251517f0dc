#!/usr/bin/env bash
# The suite's neighbour: a CPU hog that takes one core now and then, as a build, a backup or
# a monitoring agent does on a user's machine. Busy 4-6 s (one shell spinning), idle 5-7 s,
# until killed. `make test` starts it (by its pid, DBTAX_TEST_NEIGHBOUR=1) and stops it by its
# pid when the suite ends; a test must pass with it running.
set -u
trap 'exit 0' TERM INT
while :; do
  busy=$((4 + RANDOM % 3))
  idle=$((5 + RANDOM % 3))
  end=$((SECONDS + busy))
  while [ "$SECONDS" -lt "$end" ]; do :; done
  # (sleep in the background and wait: the trap ends the script at once, not after it.)
  sleep "$idle" &
  wait $!
done
