#!/usr/bin/env python3
"""Each log given read by dbtax's dry run and counted independently: its statements (those
dbtax replays plus those it leaves out as writes or server changes) against pt-query-digest's
count of Query/Execute events (administrator commands aside) for the MySQL family, and a
count of PostgreSQL's `statement:` / `execute NAME:` messages (stderr, syslog, csv, JSON).

    python3 bench/recount.py LOG...        (pt-query-digest on PATH; dbtax at target/release)

The public corpora it was run on: percona-toolkit's t/lib/samples/{slowlogs,genlogs},
pgbadger's t/fixtures (decompressed), pgreplay's test/ logs. A refusal prints dbtax's words.
"""
import re, subprocess, sys, os, json
DBTAX = os.environ.get("DBTAX", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target", "release", "dbtax"))
def dry(path, target, feature):
    p = subprocess.run([DBTAX, "run", "--log", path, "--target", target, "--feature", feature,
                        "--dry-run", "--max-statements", "100000000"], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout + p.stderr
def dbtax_count(path):
    rc, out = dry(path, "managed:mariadb", "general-log")
    if rc != 0 and "(PostgreSQL)" in out and "kind of server" in out:
        rc, out = dry(path, "managed:postgres", "log-statement")
    e = re.search(r"has no statement to replay in the slice asked \((\d+) entries read, (\d+) statements that change data or schema skipped.*?, (\d+) that change the server skipped, (\d+) malformed", out, re.S)
    if rc != 0 and e:
        fmt = "slow" if "# " in open(path, errors="replace").read(4096) else "general"
        if "managed:postgres" in out or re.search(r"LOG:|,LOG,", open(path, errors="replace").read(65536)):
            fmt = "postgres"
        return (int(e.group(2)) + int(e.group(3)), 0, fmt, int(e.group(4))), None
    if rc != 0:
        return None, out.strip().splitlines()[-1][:160]
    m = re.search(r"replay\s+(\d+) statements of (\d+) sessions \((\w+) log", out)
    l = re.search(r"left out\s+(\d+) statements that change data or schema, (\d+) that change the server, (\d+) sessions \((\d+) statements\)", out)
    mal = re.search(r"(\d+) malformed lines", out)
    total = int(m.group(1)) + int(l.group(1)) + int(l.group(2)) + int(l.group(4))
    return (total, int(m.group(2)), m.group(3), int(mal.group(1))), None
def ptqd(path, kind):
    # Statements only: Connect, Quit, Init DB and administrator commands are events too.
    args = ["pt-query-digest", "--limit", "1", "--filter",
            '($event->{cmd} || "Query") =~ m/^(?:Query|Execute)$/ && ($event->{arg} || "") !~ m/^administrator command/', path]
    if kind == "general":
        args[1:1] = ["--type", "genlog"]
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    m = re.search(r"# Overall: ([\d.]+)([kM]?) total", p.stdout)
    if not m:
        return 0
    n = float(m.group(1)) * {"": 1, "k": 1e3, "M": 1e6}[m.group(2)]
    return int(n)
PG = re.compile(r"LOG:\s+(duration: [0-9.]+ ms\s+)?(statement|execute [^:]*):")
PGCSV = re.compile(r',LOG,[0-9A-Z]{5},"(duration: [0-9.]+ ms\s+)?(statement|execute [^:]*):')
PGJSON = re.compile(r'"message":"(duration: [0-9.]+ ms\s+)?(statement|execute [^:]*):')
def pg_count(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    return max(len(PG.findall(text)), len(PGCSV.findall(text)), len(PGJSON.findall(text)))
rows = []
for path in sys.argv[1:]:
    got, why = dbtax_count(path)
    if got is None:
        rows.append((path, "refused", why, None))
        continue
    total, sessions, fmt, mal = got
    if fmt in ("slow", "general"):
        ref = ptqd(path, fmt)
        # pt-query-digest counts `# administrator command:` entries too; dbtax reads them
        # as entries that are no statements.
    else:
        ref = pg_count(path)
    rows.append((path, fmt, f"dbtax {total} (sessions {sessions}, malformed {mal}), independent {ref}", total == ref))
for r in rows:
    print(("OK  " if r[3] else "DIFF" if r[3] is False else "REF ") , os.path.basename(r[0]), r[1], r[2])
ok = sum(1 for r in rows if r[3]); diff = sum(1 for r in rows if r[3] is False); ref = sum(1 for r in rows if r[3] is None)
print(f"{ok} agree, {diff} differ, {ref} refused, of {len(rows)}")
