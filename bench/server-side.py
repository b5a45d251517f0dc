#!/usr/bin/env python3
"""What the server pays per query under dbtax's clients and under the standard connectors'.

The server feels its clients: what the handshake declares, how each statement and its values
are sent, what the answer must carry. A feature's cost is a share of what the server does per
query, so a client that makes the server work more per query than an application's makes
every feature look cheaper. This benchmark puts dbtax's load client beside sysbench
(libmariadb) on a private MariaDB and beside pgbench (libpq) on a private PostgreSQL, on the
same server, in one run, the server pinned to the last CPU and both clients to the others,
in two designs.

Together (`--design together`, the default first): both clients run at once, each as a login
of its own (MariaDB: users; PostgreSQL: databases with the same tables), and the server's CPU
is read per client: the connection threads of each user (information_schema.PROCESSLIST's
TID) or each database's backends, over windows of WINDOW seconds in which the variants take
turns in a random order. Per client its statements in the window (MariaDB's userstat,
pg_stat_statements, tracking only then). Whatever the machine does to the server it does to both clients in the
same window, so their ratio is precise where a ratio of separate runs is not; what it leaves
out is what only a client alone makes the server do (its wake-ups), which the second design
keeps.

Apart (`--design apart`), each client alone:

- per round (ROUNDS of them), each client runs a block of its variants back to back, in a
  random order (the blocks too); the variants are "off" and each logging feature, switched
  by SQL between runs; each run is N statements, and the server's CPU (its process, or the
  postmaster's whole tree with its reaped children) over the run is divided by them (the
  connections, and dbtax's checks before its load, are in it: a few hundredths of a second
  of the server's CPU, 1-2% of a run on PostgreSQL, whose backends are processes; the
  together design has no such share);
- a feature's cost is 1 - qps_feature / qps_off within one client's block (each tool times
  its own run, without connecting), over the rounds with a t interval;
- then `dbtax run` measures the same features on the same server, its own way.

Printed: each client's server µs per statement with "off" and each feature's cost, the ratio
dbtax/reference of the off state's server CPU per statement and the difference of each cost
(dbtax minus reference), paired by round, each with its 95% interval; then dbtax run's figures.

    python3 bench/server-side.py --engine mariadb --threads 8,32 --rounds 8
    python3 bench/server-side.py --engine postgres --protocol text --threads 8
    python3 bench/server-side.py --engine postgres --protocol text --threads 4 \
        --design together --rate 750

A benchmark, not a test: the machine is shared, only what is measured side by side in one run
means anything, and the intervals say how much.
"""
import argparse
import json
import math
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DBTAX = os.path.join(ROOT, "target", "release", "dbtax")
CORES = os.cpu_count() or 1
SERVER_CPU = str(CORES - 1)
LOAD_CPUS = "0" if CORES == 2 else f"0-{CORES - 2}"
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064]


def t975(df):
    return T975[df - 1] if df <= len(T975) else 2.0


def mean_ci(xs):
    """Mean and its 95% t interval (None with fewer than two values)."""
    m = statistics.mean(xs)
    if len(xs) < 2:
        return m, None
    h = t975(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))
    return m, (m - h, m + h)


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def pinned(cmd):
    return ["taskset", "-c", LOAD_CPUS] + cmd if CORES >= 2 else cmd


def ticks(pids):
    """CPU ticks (user + system) of these processes, with the reaped children of the first."""
    total = 0
    for i, pid in enumerate(pids):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
        if i == 0:
            total += int(fields[13]) + int(fields[14])
    return total / os.sysconf("SC_CLK_TCK")


def own_ticks(path):
    """CPU seconds of one process or thread (`pid`, or `pid/task/tid`), its children aside."""
    try:
        with open(f"/proc/{path}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class MariaDB:
    """A private MariaDB on a unix socket, sbtest prepared by sysbench."""

    name = "mariadb"
    workload = "point-select"
    reference = "sysbench"
    features = {
        "general-log": "SET GLOBAL general_log = ON",
        "slow-log": "SET GLOBAL long_query_time = 0; SET GLOBAL slow_query_log = ON",
    }
    off = "SET GLOBAL general_log = OFF; SET GLOBAL slow_query_log = OFF; " \
          "SET GLOBAL long_query_time = 10"

    def __init__(self, dir):
        self.dir = dir
        self.sock = os.path.join(dir, "mysqld.sock")
        user = ["--user=root"] if os.getuid() == 0 else []
        binary = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
        run(["mariadb-install-db", "--no-defaults", f"--datadir={dir}/data",
             "--auth-root-authentication-method=normal", "--skip-test-db"] + user)
        self.proc = subprocess.Popen(
            ["taskset", "-c", SERVER_CPU, binary, "--no-defaults", f"--datadir={dir}/data",
             f"--socket={self.sock}", "--skip-networking", f"--pid-file={dir}/pid",
             f"--log-error={dir}/error.log", "--innodb-buffer-pool-size=256M",
             "--max-connections=2000"] + user)
        for _ in range(300):
            if subprocess.run(["mariadb", "-S", self.sock, "-uroot", "-e", "select 1"],
                              capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        self.sql("CREATE DATABASE sbtest; SET GLOBAL log_output = 'FILE'; "
                 f"SET GLOBAL general_log_file = '{dir}/general.log'; "
                 f"SET GLOBAL slow_query_log_file = '{dir}/slow.log'")
        run(["sysbench", "oltp_point_select"] + self.sysbench_args() + ["prepare"])
        self.url = f"mysql://root@localhost/sbtest?socket={self.sock}"
        # Together, each client logs in as its own user.
        self.sql("CREATE USER ref@localhost; GRANT ALL ON *.* TO ref@localhost; "
                 "CREATE USER dbtax@localhost; GRANT ALL ON *.* TO dbtax@localhost")
        self.own_url = f"mysql://dbtax@localhost/sbtest?socket={self.sock}"

    # MariaDB copies the slow log's switch (log_slow_query) and long_query_time into each
    # session when it connects: clients already running never see it switched.
    open_sessions_miss = ["slow-log"]
    # Together, the slow log is measured another way: the sessions open with it on and
    # long_query_time = 0, and log_output (global, read as each statement is logged) switches
    # the writing, NONE ("no logging takes place, even if the slow query log is enabled") or
    # FILE. Its off state keeps the slow log's decision for every statement, the same for both
    # clients.
    by_output = {
        "before": "SET GLOBAL long_query_time = 0; SET GLOBAL slow_query_log = ON; "
                  "SET GLOBAL log_output = 'NONE'",
        "off": "SET GLOBAL log_output = 'NONE'",
        "features": {"slow-log": "SET GLOBAL log_output = 'FILE'"},
        "after": "SET GLOBAL log_output = 'FILE'",
    }

    def together(self, on):
        """Count statements per user (userstat) while the clients run together."""
        self.sql(f"SET GLOBAL userstat = {int(on)}")

    def per_client(self):
        """Each client's server threads' CPU seconds and its statements so far."""
        tids = {}
        for line in self.sql("SELECT USER, TID FROM information_schema.PROCESSLIST WHERE "
                             "USER IN ('ref', 'dbtax')").splitlines():
            user, tid = line.split()
            tids.setdefault(user, []).append(int(tid))
        counts = dict((u, int(n)) for u, n in (line.split() for line in self.sql(
            "SELECT USER, SELECT_COMMANDS FROM information_schema.USER_STATISTICS WHERE "
            "USER IN ('ref', 'dbtax')").splitlines()))
        pid = self.proc.pid
        return {u: (sum(own_ticks(f"{pid}/task/{t}") for t in tids.get(u, [])), counts.get(u, 0))
                for u in ("ref", "dbtax")}

    def sysbench_args(self):
        return ["--db-driver=mysql", f"--mysql-socket={self.sock}", "--mysql-user=root",
                "--mysql-db=sbtest", "--tables=4", "--table-size=100000",
                "--rand-type=uniform"]

    def sql(self, q):
        return run(["mariadb", "-S", self.sock, "-uroot", "-N", "-e", q])

    def pids(self):
        return [self.proc.pid]

    def logs(self):
        return [f"{self.dir}/general.log", f"{self.dir}/slow.log"]

    def reference_cmd(self, protocol, threads, n, seconds=None, rate=None):
        ps = {"prepared": "auto", "text": "disable"}[protocol]
        howlong = [f"--time={seconds}"] if seconds else [f"--events={n}", "--time=0"]
        user = ["--mysql-user=ref"] if seconds else []
        paced = [f"--rate={rate}"] if rate else []
        return pinned(["sysbench", "oltp_point_select"] + self.sysbench_args() + user
                      + [f"--threads={threads}", f"--db-ps-mode={ps}"] + howlong + paced
                      + ["run"])

    def reference_qps(self, out):
        return float(re.search(r"queries:\s+\d+\s+\(([\d.]+) per sec", out).group(1))

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


class Postgres:
    """A private PostgreSQL (as the postgres user when root), pgbench's tables at scale 10,
    configured as dbtax's managed PostgreSQL (logging collector into one file)."""

    name = "postgres"
    workload = "select-only"
    reference = "pgbench"
    features = {
        "log-statement": "ALTER SYSTEM SET log_statement = 'all'",
        "log-min-duration": "ALTER SYSTEM SET log_min_duration_statement = 0",
    }
    off = "ALTER SYSTEM RESET log_statement; ALTER SYSTEM RESET log_min_duration_statement"

    def __init__(self, dir):
        self.dir = dir
        bins = sorted(d for d in os.listdir("/usr/lib/postgresql"))
        self.bin = f"/usr/lib/postgresql/{bins[-1]}/bin"
        self.as_user = []
        if os.getuid() == 0:
            shutil.chown(dir, "postgres")
            os.chmod(dir, 0o755)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        run(self.as_user + [f"{self.bin}/initdb", "-D", f"{dir}/data", "-U", "postgres",
                            "--auth=trust", "--no-sync"])
        # pg_stat_statements counts each database's statements as they end (the together
        # design's counts; pg_stat_database's lag a backend's second); it tracks nothing
        # until then.
        opts = ["listen_addresses=", f"unix_socket_directories={dir}", "max_connections=400",
                "shared_buffers=256MB", "logging_collector=on", "log_directory=log",
                "log_filename=postgresql.log", "log_rotation_size=0", "log_rotation_age=0",
                "shared_preload_libraries=pg_stat_statements"]
        args = []
        for o in opts:
            args += ["-c", o]
        self.proc = subprocess.Popen(["taskset", "-c", SERVER_CPU] + self.as_user
                                     + [f"{self.bin}/postgres", "-D", f"{dir}/data"] + args,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(300):
            if subprocess.run(self.psql("select 1", "postgres"), capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        # Together, each client has a database of its own, with the same tables.
        for db in ("bench", "bench_dbtax"):
            run(self.psql(f"CREATE DATABASE {db}", "postgres"))
            run([f"{self.bin}/pgbench", "-i", "-q", "-s", "10", "-h", dir, "-U", "postgres", db])
        self.url = f"postgres://postgres@/bench?host={dir}"
        self.own_url = f"postgres://postgres@/bench_dbtax?host={dir}"
        run(self.psql("CREATE EXTENSION pg_stat_statements"))
        # (Set in postgresql.auto.conf, not on the command line, which a reload cannot
        # override.)
        self.together(False)

    open_sessions_miss = []
    by_output = None

    def together(self, on):
        """Count each database's statements (pg_stat_statements) while the clients run
        together."""
        track = "top" if on else "none"
        self.sql(f"ALTER SYSTEM SET pg_stat_statements.track = '{track}'")

    def per_client(self):
        """Each client's backends' CPU seconds and its statements so far."""
        rows = run(self.psql("SELECT datname, pid FROM pg_stat_activity WHERE backend_type = "
                             "'client backend' AND datname IN ('bench', 'bench_dbtax')"))
        pids = {}
        for line in rows.splitlines():
            db, pid = line.split("|")
            pids.setdefault(db, []).append(int(pid))
        counts = dict(line.split("|") for line in run(self.psql(
            "SELECT d.datname, sum(s.calls) FROM pg_stat_statements s JOIN pg_database d ON "
            "d.oid = s.dbid WHERE d.datname IN ('bench', 'bench_dbtax') GROUP BY 1"
        )).splitlines())
        return {u: (sum(own_ticks(p) for p in pids.get(db, [])), int(counts.get(db, 0)))
                for u, db in (("ref", "bench"), ("dbtax", "bench_dbtax"))}

    def psql(self, q, db="bench"):
        return [f"{self.bin}/psql", "-h", self.dir, "-U", "postgres", "-Atq", "-c", q, db]

    def sql(self, q):
        for one in q.split(";"):
            run(self.psql(one))
        return run(self.psql("SELECT pg_reload_conf()"))

    def pids(self):
        with open(f"{self.dir}/data/postmaster.pid") as f:
            postmaster = int(f.readline())
        children = run(["ps", "-o", "pid=", "--ppid", str(postmaster)]).split()
        return [postmaster] + [int(c) for c in children]

    def logs(self):
        return [f"{self.dir}/data/log/postgresql.log"]

    def reference_cmd(self, protocol, threads, n, seconds=None, rate=None):
        mode = {"prepared": "prepared", "text": "simple", "extended": "extended"}[protocol]
        howlong = ["-T", str(seconds)] if seconds else ["-t", str(max(1, n // threads))]
        howlong += ["-R", str(rate)] if rate else []
        # One thread per client, as an application's connections each have theirs (and as
        # dbtax runs them); REF_JOBS=1 gives pgbench's own default (one thread for all).
        jobs = os.environ.get("REF_JOBS", str(threads))
        return pinned([f"{self.bin}/pgbench", "-S", "-M", mode, "-n", "-c", str(threads),
                       "-j", jobs] + howlong
                      + ["-h", self.dir, "-U", "postgres", "bench"])

    def reference_qps(self, out):
        return float(re.search(r"tps = ([\d.]+) \(without initial connection", out).group(1))

    def stop(self):
        with open(f"{self.dir}/data/postmaster.pid") as f:
            os.kill(int(f.readline()), 2)
        self.proc.wait()


def dbtax_cmd(server, protocol, threads, n, seconds=None, rate=None):
    howlong = ["--duration", f"{seconds}s"] if seconds else ["--queries", str(n)]
    howlong += ["--rate", str(rate)] if rate else []
    url = server.own_url if seconds else server.url
    # DBTAX_ARGS adds to dbtax's flags (DBTAX_ARGS="--client-threads 0").
    extra = os.environ.get("DBTAX_ARGS", "").split()
    return pinned([DBTAX, "bench", "--target", url, "-w", server.workload,
                   "--threads", str(threads), "--warmup", "0s", "--protocol", protocol,
                   "--json"] + howlong + extra)


def together(server, protocol, threads, variants, rounds, window, rng, rate=None, how=None):
    """Both clients at once (each at `rate` statements per second when given, else as fast
    as it goes); per round every variant for `window` seconds, in a random order. Returns
    {(client, variant): [server µs per statement, one per round]}. `how`: another way to
    switch (`by_output`: run before the clients connect, the off state, the features, run
    after)."""
    how = how or {"before": None, "off": server.off, "features": server.features,
                  "after": None}
    if how["before"]:
        server.sql(how["before"])
    settle = 1.0
    # The clients are stopped at the end; they are given ample time (each switch and reading
    # runs psql or mariadb, slower than it looks with 64 connections busy).
    seconds = int(2 * rounds * len(variants) * (window + settle + 1.0)) + 30
    server.together(True)
    procs = [subprocess.Popen(server.reference_cmd(protocol, threads, 0, seconds, rate),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
             subprocess.Popen(dbtax_cmd(server, protocol, threads, 0, seconds, rate),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    per = {(c, v): [] for c in ("ref", "dbtax") for v in variants}
    try:
        time.sleep(3)
        for r in range(rounds):
            order = list(variants)
            rng.shuffle(order)
            for v in order:
                server.sql(how["off"] if v == "off"
                           else how["off"] + "; " + how["features"][v])
                time.sleep(settle)
                a = server.per_client()
                time.sleep(window)
                b = server.per_client()
                for c in ("ref", "dbtax"):
                    n = b[c][1] - a[c][1]
                    per[(c, v)].append((b[c][0] - a[c][0]) * 1e6 / n if n > 0 else float("nan"))
            print(f"  together, {threads} threads, round {r + 1}/{rounds}: " + ", ".join(
                f"{c} {v} {per[(c, v)][-1]:.1f} µs" for c in ("ref", "dbtax") for v in variants),
                file=sys.stderr, flush=True)
    finally:
        for p in procs:
            p.kill()
            p.wait()
        server.sql(server.off)
        if how["after"]:
            server.sql(how["after"])
        server.together(False)
    return per


def report_together(t, reference, variants, per):
    print(f"\ntogether, {t} threads: server CPU per statement of each client's own "
          f"connections, in the same windows")
    print(f"  {'variant':18s}{reference + ' µs/q':>14s}{'dbtax µs/q':>14s}"
          f"{'dbtax / ' + reference + ' [95% CI]':>34s}")
    for v in variants:
        ref, ours = per[("ref", v)], per[("dbtax", v)]
        m, ci = mean_ci([math.log(o / r) for o, r in zip(ours, ref)])
        ratio = f"×{math.exp(m):.3f}" + (f" [{math.exp(ci[0]):.3f}, {math.exp(ci[1]):.3f}]"
                                           if ci else "")
        print(f"  {v:18s}{statistics.mean(ref):14.2f}{statistics.mean(ours):14.2f}{ratio:>34s}")
    for v in variants[1:]:
        added = {c: [on - off for on, off in zip(per[(c, v)], per[(c, "off")])]
                 for c in ("ref", "dbtax")}
        diff = [o - r for o, r in zip(added["dbtax"], added["ref"])]
        print(f"  {v} adds: {reference} " + fmt_ci(*mean_ci(added["ref"]), " µs", 2, True)
              + ", dbtax " + fmt_ci(*mean_ci(added["dbtax"]), " µs", 2, True)
              + "; dbtax minus " + reference + " " + fmt_ci(*mean_ci(diff), " µs", 2, True))


def one_run(server, cmd, client):
    """Run `cmd`; the server's CPU seconds it cost and the tool's own statements/s."""
    before = ticks(server.pids())
    out = run(cmd)
    after = ticks(server.pids())
    if client == "dbtax":
        qps = json.loads(out)["qps"]
    else:
        qps = server.reference_qps(out)
    return after - before, qps


def measure(server, client, protocol, threads, n):
    """One run of `n` statements: the server's µs per statement over the whole run (its
    connections and, for dbtax, its checks included) and the tool's own statements per
    second."""
    for log in server.logs():
        if os.path.exists(log):
            open(log, "w").close()
    if client == "dbtax":
        cmd = dbtax_cmd(server, protocol, threads, n)
    else:
        cmd = server.reference_cmd(protocol, threads, n)
    cpu, qps = one_run(server, cmd, client)
    return cpu * 1e6 / n, qps


def fmt_ci(m, ci, unit="", digits=1, sign=False):
    f = f"{{:{'+' if sign else ''}.{digits}f}}"
    s = f.format(m) + unit
    if ci:
        s += " [" + f.format(ci[0]) + ", " + f.format(ci[1]) + "]"
    return s


def dbtax_run(server, protocol, threads, variants, rounds, out):
    """`dbtax run` on the same server: its own cost figures per variant at each thread count."""
    cmd = pinned([DBTAX, "run", "--target", server.url, "-w", server.workload,
                  "--threads", ",".join(map(str, threads)), "--trial", "3s",
                  "--repeats", str(max(rounds, 6)), "--protocol", protocol, "--out", out])
    for v in variants:
        cmd += ["--feature", v]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(out, "results.json")) as f:
        results = json.load(f)
    figures = {}
    for cell in results["cells"]:
        cpu = [t["server_cpu_us_per_query"] for t in cell["trials"]
               if t.get("server_cpu_us_per_query") is not None]
        o = cell.get("overhead")
        figures[(cell["threads"], cell["variant"])] = (
            statistics.mean(cpu) if cpu else None,
            (o["pct"], tuple(o["ci95_pct"])) if o else None)
    return figures


def main():
    # SIGTERM stops the script as Ctrl-C does: the server it started is stopped by its pid.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", choices=["mariadb", "postgres"], default="mariadb")
    ap.add_argument("--protocol", default="prepared", choices=["prepared", "text", "extended"])
    ap.add_argument("--threads", default="8,32")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--queries", type=int, default=120_000,
                    help="statements per run when each client runs alone")
    ap.add_argument("--no-run", action="store_true", help="skip dbtax run's own figures")
    ap.add_argument("--design", default="together,apart",
                    help="together, apart, or both (the default: together,apart)")
    ap.add_argument("--window", type=float, default=3.0,
                    help="seconds per variant when the clients run together")
    ap.add_argument("--rate", type=int, default=None,
                    help="together only: each client at this many statements per second "
                         "(sysbench --rate, pgbench -R, dbtax --rate), as production's "
                         "clients run below the server's capacity")
    ap.add_argument("--seed", type=int, default=None)
    a = ap.parse_args()
    if a.rate and a.design != "together":
        ap.error("--rate goes with --design together")
    if not os.access(DBTAX, os.X_OK):
        subprocess.run(["cargo", "build", "--release"], cwd=ROOT, check=True)
    threads = [int(t) for t in a.threads.split(",")]
    rng = random.Random(a.seed)
    dir = tempfile.mkdtemp(prefix="dbtax-server-side.")
    os.chmod(dir, 0o755)
    server = (MariaDB if a.engine == "mariadb" else Postgres)(dir)
    try:
        variants = ["off"] + list(server.features)
        clients = [server.reference, "dbtax"]
        print(f"{a.engine}, protocol {a.protocol}: server on CPU {SERVER_CPU}, clients on "
              f"CPU {LOAD_CPUS}; {a.rounds} rounds of every (client, variant) in a random "
              f"order, {a.queries} statements a run", flush=True)
        designs = a.design.split(",")
        for t in threads:
            if "together" in designs:
                reached = [v for v in variants if v not in server.open_sessions_miss]
                report_together(t, server.reference, reached,
                                together(server, a.protocol, t, reached, a.rounds, a.window,
                                         rng, a.rate))
                if server.by_output:
                    how = server.by_output
                    print("\n(the slow log with the sessions opened under it, switched by "
                          "log_output NONE / FILE)")
                    report_together(t, server.reference, ["off"] + list(how["features"]),
                                    together(server, a.protocol, t,
                                             ["off"] + list(how["features"]), a.rounds,
                                             a.window, rng, a.rate, how))
            if "apart" not in designs:
                continue
            per = {(c, v): [] for c in clients for v in variants}
            for r in range(a.rounds):
                # A block per client: its variants back to back (the drift of a shared
                # machine between them is the shortest it can be), in a random order.
                order = list(clients)
                rng.shuffle(order)
                for c in order:
                    block = list(variants)
                    rng.shuffle(block)
                    for v in block:
                        server.sql(server.off if v == "off"
                                   else server.off + "; " + server.features[v])
                        per[(c, v)].append(measure(server, c, a.protocol, t, a.queries))
                server.sql(server.off)
                print(f"  {t} threads, round {r + 1}/{a.rounds}: " + ", ".join(
                    f"{c} {v} {per[(c, v)][-1][0]:.1f} µs" for c in clients for v in variants),
                    file=sys.stderr, flush=True)
            report(t, clients, variants, per)
        if not a.no_run and "apart" in designs:
            figures = dbtax_run(server, a.protocol, threads, list(server.features), a.rounds,
                                os.path.join(dir, "run"))
            print("\ndbtax run on the same server (its own trials, its own intervals):")
            for t in threads:
                off = figures.get((t, "off"), (None, None))[0]
                row = [f"  {t} threads: off {off:.1f} µs/q" if off else f"  {t} threads:"]
                for v in server.features:
                    cpu, o = figures.get((t, v), (None, None))
                    if o:
                        row.append(f"{v} {fmt_ci(o[0], o[1], '%')}")
                print(", ".join(row))
    finally:
        server.stop()
        shutil.rmtree(dir, ignore_errors=True)


def report(t, clients, variants, per):
    ref, ours = clients
    print(f"\n{t} threads{'':16s}" + "".join(f"{v:>30s}" for v in variants))
    for c in clients:
        cells = []
        off_qps = [q for _, q in per[(c, "off")]]
        cpu, ci = mean_ci([u for u, _ in per[(c, "off")]])
        cells.append(fmt_ci(cpu, ci, " µs/q"))
        for v in variants[1:]:
            costs = [100 * (1 - q / o) for (_, q), o in zip(per[(c, v)], off_qps)]
            cells.append(fmt_ci(*mean_ci(costs), "%"))
        print(f"  {c:24s}" + "".join(f"{x:>30s}" for x in cells))
    ratio = [math.log(d / s) for (d, _), (s, _) in zip(per[(ours, "off")], per[(ref, "off")])]
    m, ci = mean_ci(ratio)
    cells = [f"×{math.exp(m):.3f}" + (f" [{math.exp(ci[0]):.3f}, {math.exp(ci[1]):.3f}]"
                                       if ci else "")]
    for v in variants[1:]:
        diff = []
        for r in range(len(per[(ours, v)])):
            mine = 100 * (1 - per[(ours, v)][r][1] / per[(ours, "off")][r][1])
            theirs = 100 * (1 - per[(ref, v)][r][1] / per[(ref, "off")][r][1])
            diff.append(mine - theirs)
        cells.append(fmt_ci(*mean_ci(diff), " pts", sign=True))
    print(f"  {'dbtax vs ' + ref:24s}" + "".join(f"{x:>30s}" for x in cells))
    print(f"  (off: server CPU per statement, dbtax's over {ref}'s; features: cost difference)")


if __name__ == "__main__":
    main()
