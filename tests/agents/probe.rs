//! A server on another host, read through a probe there (`--server-host`). The "host" is
//! made here: a network namespace joined to this one by a veth pair, in which a MariaDB and
//! an sshd run under a hostname of their own (dbtax-remote-db, `unshare --uts`); dbtax
//! reaches the server over the veth (so it does not take it for local) and starts
//! `dbtax agent --stdio` as the probe through that sshd.
//! With it the run has what a local server's has: server CPU, log bytes per query, the
//! other processes' CPU, the disk guard (a general log on an 8 MB tmpfs is stopped); a
//! probe killed mid-run stops the run with words naming the host, settings put back.

use super::*;
use dbtax::server::mysql::managed::ManagedServer;
use mysql::prelude::Queryable;

/// A network namespace of the database host's, joined to this one by a veth pair on private
/// test addresses (10.252.N.1 there, .2 here); deleted on drop.
struct HostNs {
    name: String,
    here: String,
}

impl HostNs {
    fn make(n: u32, there: &str, here: &str) -> HostNs {
        let ns = HostNs {
            name: format!("dbtax-h{n}"),
            here: format!("dbxh{n}"),
        };
        let peer = format!("dbxd{n}");
        super::netns::ip(&["netns", "add", &ns.name]);
        super::netns::ip(&[
            "link", "add", "name", &ns.here, "type", "veth", "peer", "name", &peer, "netns",
            &ns.name,
        ]);
        super::netns::ip(&["addr", "add", &format!("{here}/30"), "dev", &ns.here]);
        super::netns::ip(&["link", "set", &ns.here, "up"]);
        super::netns::ip(&[
            "-n",
            &ns.name,
            "addr",
            "add",
            &format!("{there}/30"),
            "dev",
            &peer,
        ]);
        super::netns::ip(&["-n", &ns.name, "link", "set", &peer, "up"]);
        super::netns::ip(&["-n", &ns.name, "link", "set", "lo", "up"]);
        ns
    }
}

impl Drop for HostNs {
    fn drop(&mut self) {
        // Deleting the namespace deletes its end of the veth pair, and so the pair.
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

/// The database host: its server and its sshd in a network namespace and under a hostname
/// of their own, and the URL dbtax reaches the server by over the veth. Fields drop in order:
/// the server and sshd stop before their namespace goes.
struct DbHost {
    server: ManagedServer,
    sshd: Sshd,
    url_base: String,
    _ns: HostNs,
}

impl DbHost {
    fn start(ctx: &Ctx) -> Option<DbHost> {
        if !common::can_unshare_uts() {
            eprintln!("unshare --uts is not allowed here (needs root): skipped");
            return None;
        }
        // A host of its own for each scenario (a namespace's veth may outlive it briefly).
        static HOSTS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let k = HOSTS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let n = (std::process::id() + 7 * k) % 100_000;
        let octet = 1 + n % 250;
        let (there, here) = (format!("10.252.{octet}.1"), format!("10.252.{octet}.2"));
        let ns = HostNs::make(n, &there, &here);
        // Under the host's own name: a UTS namespace too ("$0" is mariadbd).
        let server = super::netns::mariadb_in(
            &ctx.work,
            &ns.name,
            &format!(
                "unshare --uts sh -c 'hostname {} && exec \"$0\" \"$@\"' ",
                common::ELSEWHERE
            ),
            &there,
        );
        // dbtax logs in from this side of the veth.
        let mut root = common::root(&server.socket());
        root.query_drop(format!(
            "CREATE USER 'dbtax'@'{here}' IDENTIFIED BY 'pw'; \
             GRANT ALL ON *.* TO 'dbtax'@'{here}' WITH GRANT OPTION"
        ))
        .unwrap();
        let mut wrap: Vec<String> = ["ip", "netns", "exec", &ns.name].map(String::from).to_vec();
        wrap.extend(common::elsewhere_wrap());
        let wrap: Vec<&str> = wrap.iter().map(String::as_str).collect();
        let sshd = Sshd::start(&ctx.work.join("ssh-db"), &there, 2222, &wrap);
        Some(DbHost {
            server,
            sshd,
            url_base: format!("mysql://dbtax:pw@{there}:3306"),
            _ns: ns,
        })
    }

    fn conn(&self) -> mysql::Conn {
        common::root(&self.server.socket())
    }

    fn var(&self, name: &str) -> String {
        common::global_var(&self.server.socket(), name)
    }

    fn probe(&self) -> String {
        let host = self
            .url_base
            .rsplit('@')
            .next()
            .unwrap()
            .split(':')
            .next()
            .unwrap();
        format!("ssh://{host}:{}", self.sshd.port)
    }

    /// `dbtax run` on this host's server with the probe.
    fn run_args(&self, ctx: &Ctx, feature: &str, repeats: &str, out: &str) -> Vec<String> {
        let mut a = common::run_args(
            &format!("{}/t_probe", self.url_base),
            &[feature],
            "2",
            repeats,
            &ctx.work.join(out),
        );
        a.extend([
            "--server-host".into(),
            self.probe(),
            "--agent-bin".into(),
            ctx.agent_bin.display().to_string(),
        ]);
        a
    }

    fn dbtax(&self, ctx: &Ctx) -> Command {
        let mut c = common::dbtax(&ctx.state_dir);
        c.env("DBTAX_SSH_COMMAND", &self.sshd.ssh_command);
        c
    }
}

/// A mount point unmounted on drop.
struct Unmount(std::path::PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

pub(crate) fn a_server_elsewhere_is_read_through_its_probe(ctx: &Ctx) {
    // The database host's small disk, mounted before its processes start (each
    // `ip netns exec` copies the mounts there are).
    let small = ctx.work.join("small-disk");
    std::fs::create_dir_all(&small).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=8m", "tmpfs"])
        .arg(&small)
        .status()
        .is_ok_and(|s| s.success());
    // Unmounted however the scenario ends (after the host's processes, declared later, stop).
    let _unmount = Unmount(small.clone());
    let Some(db) = DbHost::start(ctx) else {
        return;
    };
    assert_eq!(db.var("hostname"), common::ELSEWHERE);
    let before = db.var("general_log");
    let o = db
        .dbtax(ctx)
        .args(db.run_args(ctx, "general-log", "3", "probe"))
        .output()
        .unwrap();
    ok(&o);
    let v = validate_results(&ctx.work.join("probe/results.json"));
    assert_eq!(db.var("general_log"), before);
    let h = &v["server_host"];
    assert_eq!(h["hostname"], common::ELSEWHERE, "{h}");
    assert_eq!(h["url"], db.probe(), "{h}");
    assert_eq!(h["pid"], db.server.pid().unwrap(), "{h}");
    assert!(
        h["found_by"].as_str().unwrap().contains("listening on"),
        "{h}"
    );
    assert!(v.get("unguarded_logs").is_none_or(|u| u == false), "{v}");
    // Every trial in the order it ran, for the messages below.
    let mut ran: Vec<String> = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| {
            c["trials"].as_array().unwrap().iter().map(move |t| {
                format!(
                    "{} b{} p{} {} after {} log {}",
                    t["started_at"],
                    t["block"],
                    t["position"],
                    c["variant"],
                    t["after"],
                    t["log_bytes_per_query"]
                )
            })
        })
        .collect();
    ran.sort();
    let ran = format!(
        "{ran:#?}\ndisturbed: {}\n{}",
        v["disturbed_blocks"],
        text(&o)
    );
    for c in v["cells"].as_array().unwrap() {
        for t in c["trials"].as_array().unwrap() {
            assert!(t["server_cpu_us_per_query"].as_f64().unwrap() > 0.0, "{t}");
            assert!(t["host_other_cpu_pct"].is_number(), "{t}");
            let bytes = t["log_bytes_per_query"].as_f64().unwrap();
            if c["variant"] == "general-log" {
                assert!(bytes > 20.0, "{t}\n{ran}");
            } else {
                assert_eq!(bytes, 0.0, "{t}\n{ran}");
            }
        }
    }
    let words = text(&o);
    assert!(words.contains("read through the probe on"), "{words}");
    assert!(words.contains("server CPU"), "{words}");

    // The same experiment by a dbtax on the database host itself (its network and host
    // name, the server's socket): it reads the server locally, and agrees with the probe.
    let here = ctx.work.join("probe-local");
    let mut args = common::run_args(
        &format!(
            "mysql://root@localhost/t_probe?socket={}",
            db.server.socket().display()
        ),
        &["general-log"],
        "2",
        "3",
        &here,
    );
    args.push("--no-pin".into());
    let mut on_host = Command::new("ip");
    on_host
        .args(["netns", "exec", &db._ns.name])
        .args(common::elsewhere_wrap())
        .arg(env!("CARGO_BIN_EXE_dbtax"))
        .args(&args)
        .env("DBTAX_STATE_DIR", &ctx.state_dir)
        .env_remove("DBTAX_TARGET");
    ok(&on_host.output().unwrap());
    let local = validate_results(&here.join("results.json"));
    assert!(local.get("server_host").is_none(), "read locally there");
    let cell = |v: &serde_json::Value| {
        v["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["variant"] == "general-log")
            .unwrap()
            .clone()
    };
    let (p, l) = (cell(&v), cell(&local));
    let (pb, lb) = (
        p["log_bytes_per_query_median"].as_f64().unwrap(),
        l["log_bytes_per_query_median"].as_f64().unwrap(),
    );
    assert!(
        (pb - lb).abs() <= 0.1 * lb,
        "log bytes: probe {pb}, local {lb}"
    );
    let ci = |c: &serde_json::Value| -> Option<(f64, f64)> {
        let i = &c["server_cpu_delta_us"]["ci95"];
        i[0].as_f64().zip(i[1].as_f64())
    };
    // What dbtax promises on a busy machine: two intervals agree; a missing one is owed to
    // blocks set aside as disturbed, or to fewer than 3 trials with a CPU reading.
    let owed = |v: &serde_json::Value, c: &serde_json::Value| {
        let read = c["trials"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["server_cpu_us_per_query"].is_number())
            .count();
        read < 3
            || v["disturbed_blocks"]
                .as_array()
                .is_some_and(|d| !d.is_empty())
    };
    match (ci(&p), ci(&l)) {
        (Some(pi), Some(li)) => assert!(
            pi.0 <= li.1 && li.0 <= pi.1,
            "server CPU added per query: probe {pi:?}, local {li:?}"
        ),
        (pi, li) => {
            assert!(
                pi.is_some() || owed(&v, &p),
                "no interval through the probe: {p}"
            );
            assert!(li.is_some() || owed(&local, &l), "no interval locally: {l}");
            println!("  server CPU intervals: probe {pi:?}, local {li:?} (a busy machine)");
        }
    }

    capture_through_the_probe(ctx, &db);

    // The disk guard there: a general log on an 8 MB tmpfs of that host stops the run
    // before it fills it, and the settings come back.
    if mounted {
        // Most of it taken already: what is left is under 10% after a trial's log.
        let filler = small.join("filler");
        std::fs::write(&filler, vec![0u8; 7 * 1024 * 1024 + 300 * 1024]).unwrap();
        let log = small.join("general.log");
        let mut conn = db.conn();
        let old_file = db.var("general_log_file");
        conn.query_drop(format!("SET GLOBAL general_log_file = '{}'", log.display()))
            .unwrap();
        let o = db
            .dbtax(ctx)
            .args(db.run_args(ctx, "general-log", "20", "probe-disk"))
            .output()
            .unwrap();
        let said = text(&o);
        conn.query_drop(format!("SET GLOBAL general_log_file = '{old_file}'"))
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{said}");
        assert!(said.contains("dbtax keeps at least 10% free"), "{said}");
        assert_eq!(db.var("general_log"), before);
    } else {
        eprintln!("cannot mount a tmpfs here: the disk-guard part skipped");
    }

    // The probe killed mid-run: the run stops naming the host, settings put back, what was
    // measured kept.
    let args = db.run_args(ctx, "general-log", "40", "probe-killed");
    let (child, _) =
        signal_the_probe_once_logging(&db, ctx, &args, libc::SIGKILL, Duration::from_secs(60));
    let o = child.wait_with_output().unwrap();
    let said = text(&o);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!("the probe on the server's host {}", db.probe())),
        "{said}"
    );
    assert_eq!(db.var("general_log"), before);
    assert_eq!(ctx.journals(), 0);
    let v = validate_results(&ctx.work.join("probe-killed/results.json"));
    assert_eq!(v["complete"], false);
}

/// `dbtax capture` of the server elsewhere: its slow log is on that host, read there by the
/// probe and sent over; the statements a session ran while it was on are in the file, the
/// settings are back, and the file replays (its dry run reads them).
fn capture_through_the_probe(ctx: &Ctx, db: &DbHost) {
    let vars = ["slow_query_log", "long_query_time", "slow_query_log_file"];
    let found = vars.map(|v| db.var(v));
    let out = ctx.work.join("elsewhere-capture.log");
    let probe = db.probe();
    let capture = common::Capture::start_with(
        db.dbtax(ctx),
        "5s",
        &format!("{}/", db.url_base),
        &out,
        &[
            "--server-host".as_ref(),
            probe.as_ref(),
            "--agent-bin".as_ref(),
            ctx.agent_bin.as_os_str(),
        ],
    );
    // A session opened after the change (long_query_time applies to new connections).
    let mut c = db.conn();
    for i in 0..40 {
        let _: Option<u64> = c
            .query_first(format!("SELECT {i} + 0 AS elsewhere_marker"))
            .unwrap();
    }
    drop(c);
    let (code, said) = capture.finish();
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(vars.map(|v| db.var(v)), found, "{said}");
    assert_eq!(ctx.journals(), 0);
    let log = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        log.matches("AS elsewhere_marker").count(),
        40,
        "{said}\n{log}"
    );
    assert!(said.contains("It holds"), "{said}");
}

/// `dbtax ARGS` by `cmd` on the database host's server, returned once its general log is on
/// (within `limit`).
fn spawn_once_logging(
    mut cmd: Command,
    db: &DbHost,
    args: &[String],
    limit: Duration,
) -> std::process::Child {
    let child = cmd
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the general log to be on", limit, || {
        db.var("general_log") == "1"
    });
    child
}

/// `dbtax run ARGS` started on the database host's server; once its general log is on, the
/// probe's process (the only agent) gets `signal`. The run, and the probe's pid.
fn signal_the_probe_once_logging(
    db: &DbHost,
    ctx: &Ctx,
    args: &[String],
    signal: i32,
    limit: Duration,
) -> (std::process::Child, i32) {
    let child = spawn_once_logging(db.dbtax(ctx), db, args, limit);
    let pids = ctx.agent_pids();
    assert_eq!(pids.len(), 1, "the probe: {pids:?}");
    unsafe {
        libc::kill(pids[0], signal);
    }
    (child, pids[0])
}

/// A PostgreSQL started here in a network namespace of its own (as the `postgres` user,
/// listening on the namespace's address only), stopped by its pid with a fast shutdown.
struct PgElsewhere {
    child: std::process::Child,
}

impl Drop for PgElsewhere {
    fn drop(&mut self) {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGINT);
        }
        let _ = self.child.wait();
    }
}

fn pg_elsewhere(ctx: &Ctx, ns: &HostNs, there: &str, here: &str) -> PgElsewhere {
    let bin = dbtax::server::postgres::managed::find_bin_dir(None).unwrap();
    let dir = ctx.work.join("pg-host");
    std::fs::create_dir_all(&dir).unwrap();
    let ok = Command::new("chown")
        .args(["postgres:postgres"])
        .arg(&dir)
        .status()
        .unwrap()
        .success();
    assert!(ok, "chown postgres");
    let data = dir.join("data");
    let o = Command::new("runuser")
        .args(["-u", "postgres", "--"])
        .arg(bin.join("initdb"))
        .arg("-D")
        .arg(&data)
        .args(["-U", "postgres", "--auth=trust", "--no-sync"])
        .output()
        .unwrap();
    assert!(o.status.success(), "initdb: {}", text(&o));
    let hba = data.join("pg_hba.conf");
    let mut rules = std::fs::read_to_string(&hba).unwrap();
    rules.push_str(&format!("host all all {here}/32 trust\n"));
    std::fs::write(&hba, rules).unwrap();
    let child = Command::new("ip")
        .args(["netns", "exec", &ns.name, "setpriv"])
        .args(["--reuid=postgres", "--regid=postgres", "--init-groups"])
        .arg(bin.join("postgres"))
        .arg("-D")
        .arg(&data)
        .args([
            "-c",
            &format!("listen_addresses={there}"),
            "-c",
            "port=5432",
        ])
        .arg("-c")
        .arg(format!("unix_socket_directories={}", dir.display()))
        .args(["-c", "logging_collector=on", "-c", "log_directory=log"])
        .args(["-c", "log_filename=postgresql.log"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("stderr.log")).unwrap())
        .spawn()
        .unwrap();
    let pg = PgElsewhere { child };
    let mut config = postgres::Config::new();
    config
        .host(there)
        .port(5432)
        .user("postgres")
        .dbname("postgres");
    wait_for(
        "PostgreSQL on the database host",
        Duration::from_secs(30),
        || config.connect(postgres::NoTls).is_ok(),
    );
    pg
}

/// The same for PostgreSQL: no host name to compare, so dbtax takes a server reached over
/// another address for not local; the probe finds the postmaster by postmaster.pid and its
/// socket, and the run has server CPU (the process tree) and the statement log's bytes.
pub(crate) fn a_postgresql_elsewhere_is_read_through_its_probe(ctx: &Ctx) {
    let n = std::process::id() % 100_000 + 1;
    let octet = 1 + n % 250;
    let (there, here) = (format!("10.253.{octet}.1"), format!("10.253.{octet}.2"));
    let ns = HostNs::make(n, &there, &here);
    let pg = pg_elsewhere(ctx, &ns, &there, &here);
    let mut wrap: Vec<String> = ["ip", "netns", "exec", &ns.name].map(String::from).to_vec();
    wrap.extend(common::elsewhere_wrap());
    let wrap: Vec<&str> = wrap.iter().map(String::as_str).collect();
    let sshd = Sshd::start(&ctx.work.join("ssh-pg"), &there, 2222, &wrap);
    let url = format!("postgres://postgres@{there}:5432/postgres");
    let out = ctx.work.join("probe-pg");
    let mut args = common::run_args(&url, &["log-statement"], "2", "3", &out);
    args.extend([
        "-w".into(),
        "select-only".into(),
        "--server-host".into(),
        format!("ssh://{there}:2222"),
        "--agent-bin".into(),
        ctx.agent_bin.display().to_string(),
    ]);
    let mut c = common::dbtax(&ctx.state_dir);
    c.env("DBTAX_SSH_COMMAND", &sshd.ssh_command);
    let o = c.args(&args).output().unwrap();
    ok(&o);
    let v = validate_results(&out.join("results.json"));
    let h = &v["server_host"];
    assert!(
        h["found_by"].as_str().unwrap().contains("postmaster.pid"),
        "{h}"
    );
    assert_eq!(h["pid"], pg.child.id(), "{h}");
    for c in v["cells"].as_array().unwrap() {
        for t in c["trials"].as_array().unwrap() {
            assert!(t["server_cpu_us_per_query"].as_f64().unwrap() > 0.0, "{t}");
            if c["variant"] == "log-statement" {
                assert!(t["log_bytes_per_query"].as_f64().unwrap() > 20.0, "{t}");
            }
        }
    }
    let mut config = postgres::Config::new();
    config
        .host(&there)
        .port(5432)
        .user("postgres")
        .dbname("postgres");
    let shown: String = config
        .connect(postgres::NoTls)
        .unwrap()
        .query_one("SHOW log_statement", &[])
        .unwrap()
        .get(0);
    assert_eq!(shown, "none");
    drop(sshd);
    drop(pg);
    drop(ns);
}

/// The database host reached through a slow link: ssh's ProxyCommand is the suite's relay
/// (200 ± 50 ms a chunk each way; held while `stall` exists).
fn through_relay(db: &DbHost, ctx: &Ctx, stall: &Path) -> Command {
    let mut c = common::dbtax(&ctx.state_dir);
    c.env(
        "DBTAX_SSH_COMMAND",
        format!(
            "{} {}",
            db.sshd.ssh_command,
            super::relay::proxy_option(200, 50, stall)
        ),
    );
    c
}

/// Poll `cond` every 100 ms until it holds or `limit` passes; whether it held.
fn holds_within(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    cond()
}

/// A slow link to the probe (200 ± 50 ms a chunk each way) that also stalls for 20 s during
/// a trial of the general log: every kept trial has the probe's figures; the stalled
/// reading is late, its block is set aside (said, and recorded with its words), the general
/// log is switched off while the probe is waited for, and the run completes. A late answer
/// is dropped, never taken for the next reading's.
pub(crate) fn a_slow_or_stalled_link_to_the_probe_costs_trials_not_the_run(ctx: &Ctx) {
    let Some(db) = DbHost::start(ctx) else {
        return;
    };
    let before = db.var("general_log");
    let stall = ctx.work.join("relay-stall");
    let _ = std::fs::remove_file(&stall);

    // The stall: 20 s, from the moment a trial of the general log runs.
    let args = db.run_args(ctx, "general-log", "3", "stalled-link");
    let child = spawn_once_logging(
        through_relay(&db, ctx, &stall),
        &db,
        &args,
        Duration::from_secs(120),
    );
    std::fs::write(&stall, b"").unwrap();
    let stalled = Instant::now();
    // The reading is late after 15 s; then the log is switched off, before the link is
    // back.
    let off_in_stall = holds_within(Duration::from_secs(19), || db.var("general_log") == "0");
    std::thread::sleep(Duration::from_secs(20).saturating_sub(stalled.elapsed()));
    std::fs::remove_file(&stall).unwrap();
    let o = child.wait_with_output().unwrap();
    let said = text(&o);
    ok(&o);
    assert!(
        off_in_stall,
        "the general log stayed on while the probe was silent: {said}"
    );
    assert!(
        said.contains("did not answer a reading within 15 s"),
        "{said}"
    );
    assert!(said.contains("came late"), "the words: {said}");
    let v = validate_results(&ctx.work.join("stalled-link/results.json"));
    assert_eq!(v["complete"], true, "{said}");
    let late: Vec<&serde_json::Value> = v["disturbed_blocks"]
        .as_array()
        .map(|d| d.iter().filter(|b| b["late_reading"].is_string()).collect())
        .unwrap_or_default();
    assert!(
        !late.is_empty(),
        "no block set aside for the late reading: {v}"
    );
    // Every cell's kept blocks are whole (the lost block's trials are in none), each kept
    // trial has the probe's readings over the slow link, and its figures stand: an
    // interval, or the words why not.
    for c in v["cells"].as_array().unwrap() {
        for t in c["trials"].as_array().unwrap() {
            assert!(
                late.iter().all(|b| b["block"] != t["block"]),
                "a trial of the lost block kept: {t}"
            );
            assert!(t["server_cpu_us_per_query"].as_f64().unwrap() > 0.0, "{t}");
            if c["variant"] == "general-log" {
                assert!(t["log_bytes_per_query"].as_f64().unwrap() > 20.0, "{t}");
            }
        }
        if c["variant"] == "general-log" {
            assert!(
                c["overhead"]["ci95_pct"].is_array() || c["no_interval"].is_string(),
                "{c}"
            );
        }
    }
    assert_eq!(db.var("general_log"), before);
    assert_eq!(ctx.journals(), 0);
}

/// The probe's agent stopped (SIGSTOP) longer than its silence bound (`--probe-silence 20s`
/// here, to keep the suite short; 60 s by default): the general log is switched off once a
/// reading is late, and the run stops when the bound passes, naming the host, its results
/// kept and its settings put back.
pub(crate) fn a_probe_silent_past_its_bound_stops_the_run_with_the_log_off(ctx: &Ctx) {
    let Some(db) = DbHost::start(ctx) else {
        return;
    };
    let before = db.var("general_log");
    let mut args = db.run_args(ctx, "general-log", "40", "probe-stopped");
    args.extend(["--probe-silence".into(), "20s".into()]);
    let (child, probe) =
        signal_the_probe_once_logging(&db, ctx, &args, libc::SIGSTOP, Duration::from_secs(120));
    let stopped = Instant::now();
    let off_while_silent = holds_within(Duration::from_secs(19), || db.var("general_log") == "0");
    let o = child.wait_with_output().unwrap();
    let waited = stopped.elapsed();
    unsafe {
        libc::kill(probe, libc::SIGCONT);
    }
    let said = text(&o);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(off_while_silent, "the general log stayed on: {said}");
    assert!(
        said.contains(&format!("the probe on the server's host {}", db.probe()))
            && said.contains("has been silent for"),
        "{said}"
    );
    assert!(
        waited >= Duration::from_secs(20),
        "stopped after {waited:?}: {said}"
    );
    assert_eq!(db.var("general_log"), before);
    assert_eq!(ctx.journals(), 0);
    let v = validate_results(&ctx.work.join("probe-stopped/results.json"));
    assert_eq!(v["complete"], false);
    wait_for("the probe to end", Duration::from_secs(20), || {
        ctx.agent_pids().is_empty()
    });
}
