#!/usr/bin/env bash
# A server on "another host", read through a probe there, then the same server read
# locally. The host is made here: a private MariaDB started under another hostname
# (`unshare --uts`, hostname dbtax-remote-db; reached over TCP on 127.0.0.1, so dbtax does not
# take it for local) and an sshd on a private port under that hostname too, through which
# dbtax starts its probe (`--server-host`). The general log against off, 4 threads: through
# the probe; without it (refused); with --unguarded-logs (throughput only); then the same
# datadir restarted under this machine's hostname and measured locally (socket URL). Needs
# root (unshare, sshd). The server is bound to the last CPU. A demonstration, not a test.
#
#   bash bench/server-host.sh [repeats, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
REPEATS=${1:-10}
DBTAX=./target/release/dbtax
[ -x "$DBTAX" ] || cargo build --release
MARIADBD=$(command -v mariadbd || echo /usr/sbin/mariadbd)
DIR=$(mktemp -d /tmp/dbtax-host.XXXXXX)
SOCK=$DIR/mysqld.sock
PORT=$((20000 + RANDOM % 20000))
SSH_PORT=$((PORT + 1))
cleanup() {
  for p in "$DIR/pid" "$DIR/sshd.pid"; do
    if [ -f "$p" ]; then kill "$(cat "$p")" 2>/dev/null || true; fi
  done
  sleep 1
  [ -n "${KEEP:-}" ] || rm -rf "$DIR"
}
trap cleanup EXIT INT TERM
ELSEWHERE=(unshare --uts sh -c 'hostname dbtax-remote-db && exec "$@"' sh)

mariadb-install-db --no-defaults --datadir="$DIR/data" --auth-root-authentication-method=normal \
  --skip-test-db --user=root >"$DIR/install.log" 2>&1
start_server() {
"$@" "$MARIADBD" --no-defaults --datadir="$DIR/data" --socket="$SOCK" \
  --port="$PORT" --bind-address=127.0.0.1 --pid-file="$DIR/pid" --log-error="$DIR/error.log" \
  --innodb-buffer-pool-size=256M --user=root &
for _ in $(seq 300); do mariadb -S "$SOCK" -uroot -e 'select 1' >/dev/null 2>&1 && break; sleep 0.1; done
# The server on the last CPU, dbtax's load on the others.
taskset -acp "$(($(nproc --all) - 1))" "$(cat "$DIR/pid")" >/dev/null
}
start_server "${ELSEWHERE[@]}"
mariadb -S "$SOCK" -uroot -e "CREATE USER IF NOT EXISTS root@'127.0.0.1'; GRANT ALL ON *.* TO root@'127.0.0.1' WITH GRANT OPTION"

ssh-keygen -q -t ed25519 -N '' -f "$DIR/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$DIR/user_key"
cp "$DIR/user_key.pub" "$DIR/authorized_keys"
cat >"$DIR/sshd_config" <<CONF
Port $SSH_PORT
ListenAddress 127.0.0.1
HostKey $DIR/host_key
PidFile $DIR/sshd.pid
AuthorizedKeysFile $DIR/authorized_keys
StrictModes no
UsePAM no
PasswordAuthentication no
PermitRootLogin prohibit-password
LogLevel ERROR
CONF
mkdir -p /run/sshd
"${ELSEWHERE[@]}" /usr/sbin/sshd -f "$DIR/sshd_config"
export DBTAX_SSH_COMMAND="ssh -i $DIR/user_key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
for _ in $(seq 100); do $DBTAX_SSH_COMMAND -o BatchMode=yes -p "$SSH_PORT" 127.0.0.1 true 2>/dev/null && break; sleep 0.1; done

ARGS=(run --feature general-log --threads 4 --repeats "$REPEATS" --trial 0.5s --warmup 0.3s
      --table-size 10000)
echo "== through the probe: --server-host ssh://127.0.0.1:$SSH_PORT, mysql://root@127.0.0.1:$PORT"
DBTAX_STATE_DIR="$DIR/state" "$DBTAX" "${ARGS[@]}" --target "mysql://root@127.0.0.1:$PORT/dbtax" \
  --server-host "ssh://127.0.0.1:$SSH_PORT" --agent-bin "$PWD/$DBTAX" --out "$DIR/probe" \
  2>"$DIR/probe.err" | grep -v '^$' || { tail -3 "$DIR/probe.err"; exit 1; }
jq -c '.server_host' "$DIR/probe/results.json"
echo "== the same server without a probe: refused unless --unguarded-logs"
DBTAX_STATE_DIR="$DIR/state" "$DBTAX" "${ARGS[@]}" --target "mysql://root@127.0.0.1:$PORT/dbtax" \
  --out "$DIR/none" 2>&1 | tail -1 | cut -c1-200 || true
echo "== --unguarded-logs: throughput only"
DBTAX_STATE_DIR="$DIR/state" "$DBTAX" "${ARGS[@]}" --target "mysql://root@127.0.0.1:$PORT/dbtax" \
  --unguarded-logs --out "$DIR/unguarded" 2>/dev/null | grep -v '^$' || true
echo "== the same datadir restarted under this machine's hostname, read locally (socket URL)"
kill "$(cat "$DIR/pid")"
for _ in $(seq 300); do [ -e "$SOCK" ] || break; sleep 0.1; done
start_server env
DBTAX_STATE_DIR="$DIR/state" "$DBTAX" "${ARGS[@]}" --target "mysql://root@localhost/dbtax?socket=$SOCK" \
  --out "$DIR/local" 2>/dev/null | grep -v '^$' || true
