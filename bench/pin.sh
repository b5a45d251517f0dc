# Sourced by the benchmarks: PIN=1 (the default) runs the server on the last CPU and the load
# (both tools) on the others, so the scheduler does not get into the comparison; PIN=0 runs
# both free (say so with figures). Sets CORES, SERVER_PIN and LOAD_PIN (command prefixes).
CORES=$(nproc)
SERVER_PIN=(); LOAD_PIN=()
if [ "${PIN:-1}" = 1 ] && [ "$CORES" -ge 2 ]; then
  SERVER_PIN=(taskset -c $((CORES - 1))); LOAD_PIN=(taskset -c 0-$((CORES - 2)))
fi
