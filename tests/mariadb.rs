//! Against a real MariaDB: one server for this whole test binary, started by dbtax's own
//! managed-server code on a private socket (and 127.0.0.1 on a free port), stopped by its pid
//! at the end. The server is the "user's own server" here: dbtax reaches it by URL, so the
//! journal, restore and privilege checks are the real ones. A small harness runs the
//! scenarios in order and prints libtest's summary line.

use dbtax::target::managed::{ManagedConfig, ManagedServer};
use mysql::prelude::Queryable;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

struct Ctx {
    socket: PathBuf,
    port: u16,
    state_dir: PathBuf,
    work: PathBuf,
}

impl Ctx {
    fn url(&self, schema: &str) -> String {
        format!(
            "mysql://root@localhost/{schema}?socket={}",
            self.socket.display()
        )
    }

    fn url_as(&self, user: &str, pass: &str, schema: &str) -> String {
        format!(
            "mysql://{user}:{pass}@localhost/{schema}?socket={}",
            self.socket.display()
        )
    }

    fn root(&self) -> mysql::Conn {
        let opts = mysql::OptsBuilder::new()
            .user(Some("root"))
            .socket(Some(self.socket.to_string_lossy().into_owned()));
        mysql::Conn::new(opts).expect("root connection to the test server")
    }

    fn var(&self, name: &str) -> String {
        let v: Option<String> = self
            .root()
            .query_first(format!("SELECT @@GLOBAL.{name}"))
            .unwrap();
        v.unwrap_or_default()
    }

    fn set(&self, name: &str, value: &str) {
        self.root()
            .query_drop(format!("SET GLOBAL {name} = {value}"))
            .unwrap();
    }

    /// The number a `SELECT COUNT(*) ...` returns, as root.
    fn count(&self, sql: &str) -> u64 {
        let n: Option<u64> = self.root().query_first(sql).unwrap();
        n.unwrap_or(0)
    }

    fn dbtax(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_dbtax"));
        c.env("DBTAX_STATE_DIR", &self.state_dir)
            .env_remove("DBTAX_TARGET");
        c
    }

    fn run<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> Output {
        self.dbtax().args(args).output().expect("running dbtax")
    }

    /// `dbtax run` on this server: `features` against off, short trials, results in `out`.
    fn run_args(
        &self,
        schema: &str,
        features: &[&str],
        threads: &str,
        repeats: &str,
        out: &Path,
    ) -> Vec<String> {
        let mut a = vec!["run".to_string(), "--target".into(), self.url(schema)];
        for f in features {
            a.extend(["--feature".to_string(), f.to_string()]);
        }
        a.extend(["--threads", threads, "--repeats", repeats, "--out"].map(String::from));
        a.push(out.display().to_string());
        a.extend(TRIAL.map(String::from));
        a
    }

    /// Write an experiment file into the work directory.
    fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.work.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn out_dir(&self, name: &str) -> PathBuf {
        self.work.join(name)
    }

    fn journals(&self) -> usize {
        std::fs::read_dir(self.state_dir.join("journal"))
            .map(|d| d.count())
            .unwrap_or(0)
    }
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn ok(o: &Output) {
    assert_eq!(o.status.code(), Some(0), "{}", text(o));
}

fn json_of(o: &Output) -> serde_json::Value {
    ok(o);
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(o)))
}

fn validate_results(path: &Path) -> serde_json::Value {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../schema/results.schema.json")).unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&v)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "{} does not match the schema: {errors:?}",
        path.display()
    );
    v
}

fn cell<'a>(v: &'a serde_json::Value, variant: &str, threads: u64) -> &'a serde_json::Value {
    v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["variant"] == variant && c["threads"] == threads)
        .unwrap_or_else(|| panic!("no cell {variant}@{threads}"))
}

fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

const TRIAL: [&str; 6] = [
    "--trial",
    "0.6s",
    "--warmup",
    "0.2s",
    "--table-size",
    "2000",
];

fn bench_prints_one_trial_as_json_over_the_socket(ctx: &Ctx) {
    let url = ctx.url("t_bench");
    let o = ctx.run(&[
        "bench",
        "--target",
        &url,
        "--threads",
        "4",
        "--duration",
        "1s",
        "--warmup",
        "0.2s",
        "--table-size",
        "2000",
        "--json",
    ]);
    let v = json_of(&o);
    assert!(v["qps"].as_f64().unwrap() > 0.0);
    assert!(v["queries"].as_u64().unwrap() > 0);
    assert_eq!(v["errors"], 0);
    assert_eq!(v["threads"], 4);
    assert_eq!(v["workload"]["kind"], "point-select");
    for p in ["p50", "p95", "p99", "max"] {
        assert!(v["latency_ms"][p].as_f64().unwrap() > 0.0, "{p}");
    }
    assert!(v["client_cpu_us_per_query"].as_f64().unwrap() > 0.0);
    // The server runs on this machine: its CPU per query is known.
    assert!(v["server_cpu_us_per_query"].as_f64().unwrap() > 0.0, "{v}");
    assert!(v.get("log_bytes_per_query").is_some());
}

fn tcp_means_tcp(ctx: &Ctx) {
    // Fails (subquery returns 2 rows) unless the session really came over TCP.
    let q = "SELECT IF((SELECT HOST FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()) \
             LIKE '127.0.0.1:%', 1, (SELECT 1 UNION SELECT 2))";
    let url = format!("mysql://root@127.0.0.1:{}/", ctx.port);
    let o = ctx.run(&[
        "bench",
        "--target",
        &url,
        "--query",
        q,
        "--queries",
        "60",
        "--threads",
        "2",
        "--json",
    ]);
    let v = json_of(&o);
    assert_eq!(v["queries"], 60, "{v}");
    assert_eq!(v["errors"], 0, "{v}");
}

fn query_workload_stops_after_exactly_n_queries(ctx: &Ctx) {
    let o = ctx.run(&[
        "bench",
        "--target",
        &ctx.url("t_query"),
        "--query",
        "SELECT 1",
        "--queries",
        "1001",
        "--threads",
        "3",
        "--json",
    ]);
    let v = json_of(&o);
    assert_eq!(v["queries"], 1001);
    assert_eq!(v["workload"]["kind"], "query");
}

fn sysbench_tables_are_reused_as_they_are(ctx: &Ctx) {
    ctx.root()
        .query_drop("CREATE DATABASE IF NOT EXISTS sbt")
        .unwrap();
    let sb = Command::new("sysbench")
        .args([
            "oltp_point_select",
            "--db-driver=mysql",
            "--mysql-user=root",
            "--mysql-db=sbt",
        ])
        .arg(format!("--mysql-socket={}", ctx.socket.display()))
        .args(["--tables=2", "--table-size=500", "prepare"])
        .output()
        .expect("sysbench is installed by `make test`");
    ok(&sb);
    let o = ctx.run(&[
        "bench",
        "--target",
        &ctx.url("sbt"),
        "--tables",
        "2",
        "--table-size",
        "100000",
        "--duration",
        "0.5s",
        "--warmup",
        "0s",
        "--json",
    ]);
    json_of(&o);
    assert_eq!(
        ctx.count("SELECT COUNT(*) FROM sbt.sbtest2"),
        500,
        "dbtax must not refill sysbench's tables"
    );
}

fn run_measures_and_restores_every_setting(ctx: &Ctx) {
    ctx.set("long_query_time", "7");
    let out = ctx.out_dir("run");
    let o = ctx.run(&ctx.run_args("t_run", &["general-log", "slow-log"], "1,3", "2", &out));
    ok(&o);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("threads 3") && stdout.contains("general-log"),
        "{stdout}"
    );
    let v = validate_results(&out.join("results.json"));
    assert_eq!(v["complete"], true);
    assert_eq!(v["cells"].as_array().unwrap().len(), 6);
    for t in [1, 3] {
        let off = cell(&v, "off", t);
        assert!(off["overhead"].is_null());
        assert!(
            off["log_bytes_per_query_median"].as_f64().unwrap() < 1.0,
            "{off}"
        );
        for feature in ["general-log", "slow-log"] {
            let c = cell(&v, feature, t);
            assert_eq!(c["trials"].as_array().unwrap().len(), 2);
            assert!(c["overhead"]["ci95_pct"].is_array(), "{c}");
            // Each query writes a line of log: tens of bytes at least.
            assert!(
                c["log_bytes_per_query_median"].as_f64().unwrap() > 20.0,
                "{c}"
            );
        }
    }
    assert_eq!(v["variants"][2]["settings"]["long_query_time"], "0");
    assert_eq!(ctx.var("general_log"), "0");
    assert_eq!(ctx.var("slow_query_log"), "0");
    assert_eq!(ctx.var("long_query_time").parse::<f64>().unwrap(), 7.0);
    assert_eq!(
        ctx.journals(),
        0,
        "the journal is removed after a clean restore"
    );
    ctx.set("long_query_time", "10");
}

fn dry_run_prints_statements_and_changes_nothing(ctx: &Ctx) {
    let o = ctx.run(&[
        "run",
        "--target",
        &ctx.url("t_dry"),
        "--feature",
        "general-log",
        "--dry-run",
    ]);
    ok(&o);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("SET GLOBAL general_log = ON"), "{stdout}");
    assert!(stdout.contains("Nothing was changed"), "{stdout}");
    assert_eq!(ctx.var("general_log"), "0");
    assert_eq!(
        ctx.count("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 't_dry'"),
        0,
        "--dry-run must not create the schema"
    );
}

fn a_bad_out_directory_fails_before_anything_changes(ctx: &Ctx) {
    let blocker = ctx.file("not-a-dir", "a file where --out wants a directory");
    let out = blocker.join("results");
    let o = ctx.run(&ctx.run_args("t_badout", &["audit"], "1", "2", &out));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("cannot create --out"),
        "{}",
        text(&o)
    );
    assert_eq!(
        ctx.count(
            "SELECT COUNT(*) FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'SERVER_AUDIT'"
        ),
        0,
        "the audit plugin was never installed"
    );
    assert_eq!(
        ctx.count(
            "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 't_badout'"
        ),
        0,
        "no schema was created"
    );
}

fn audit_plugin_is_installed_for_the_run_and_removed_after(ctx: &Ctx) {
    let out = ctx.out_dir("audit");
    let o = ctx.run(&ctx.run_args("t_audit", &["audit"], "2", "2", &out));
    ok(&o);
    let v = validate_results(&out.join("results.json"));
    let c = cell(&v, "audit", 2);
    assert!(
        c["log_bytes_per_query_median"].as_f64().unwrap() > 20.0,
        "{c}"
    );
    assert_eq!(ctx.count("SELECT COUNT(*) FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'SERVER_AUDIT' AND PLUGIN_STATUS = 'ACTIVE'"), 0, "dbtax installed the plugin, so it must remove it");
}

fn spawn_run(ctx: &Ctx, feature: &str, schema: &str, out: &Path) -> std::process::Child {
    ctx.dbtax()
        .args(ctx.run_args(schema, &[feature], "2", "50", out))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn ctrl_c_restores_settings_and_keeps_partial_results(ctx: &Ctx) {
    let out = ctx.out_dir("sigint");
    let mut child = spawn_run(ctx, "general-log", "t_sigint", &out);
    wait_for(
        "general_log to be switched on",
        Duration::from_secs(60),
        || ctx.var("general_log") == "1",
    );
    wait_for(
        "a first block in results.json",
        Duration::from_secs(60),
        || {
            std::fs::read_to_string(out.join("results.json"))
                .is_ok_and(|s| s.contains("\"trials\": [\n"))
        },
    );
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_child(&mut child, Duration::from_secs(30));
    let o = child.wait_with_output().unwrap();
    assert_eq!(status, Some(130), "{}", text(&o));
    assert_eq!(
        ctx.var("general_log"),
        "0",
        "general_log restored after Ctrl-C"
    );
    let v = validate_results(&out.join("results.json"));
    assert_eq!(v["complete"], false);
    assert!(!cell(&v, "off", 2)["trials"].as_array().unwrap().is_empty());
    assert_eq!(ctx.journals(), 0);
}

fn wait_child(child: &mut std::process::Child, limit: Duration) -> Option<i32> {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("dbtax did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn kill_9_then_restore_puts_settings_back(ctx: &Ctx) {
    ctx.set("long_query_time", "3");
    let out = ctx.out_dir("kill9");
    let mut child = spawn_run(ctx, "slow-log", "t_kill", &out);
    wait_for(
        "slow_query_log to be switched on",
        Duration::from_secs(60),
        || ctx.var("slow_query_log") == "1",
    );
    child.kill().unwrap(); // SIGKILL: no chance to restore
    child.wait().unwrap();
    assert_eq!(ctx.var("slow_query_log"), "1", "left on by the killed run");
    assert_eq!(ctx.journals(), 1);
    // A new run refuses to start over the pending journal, and changes nothing.
    let o = ctx.run(&[
        "run",
        "--target",
        &ctx.url("t_kill2"),
        "--feature",
        "general-log",
        "--threads",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("dbtax restore"),
        "{}",
        text(&o)
    );
    assert_eq!(ctx.var("general_log"), "0");
    assert_eq!(
        ctx.count("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 't_kill2'"),
        0,
        "refused before preparing any table"
    );
    let o = ctx.run(&["restore", "--target", &ctx.url("t_kill")]);
    ok(&o);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("SET GLOBAL slow_query_log = OFF"),
        "{}",
        text(&o)
    );
    assert_eq!(ctx.var("slow_query_log"), "0");
    assert_eq!(ctx.var("long_query_time").parse::<f64>().unwrap(), 3.0);
    assert_eq!(ctx.journals(), 0);
    let o = ctx.run(&["restore", "--target", &ctx.url("t_kill")]);
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stdout).contains("Nothing to restore"));
    ctx.set("long_query_time", "10");
}

fn a_user_without_privileges_gets_exit_2_and_nothing_changes(ctx: &Ctx) {
    let mut root = ctx.root();
    root.query_drop("CREATE USER IF NOT EXISTS 'weak'@'localhost' IDENTIFIED BY 'Pw-weak-1'")
        .unwrap();
    root.query_drop("CREATE DATABASE IF NOT EXISTS t_weak")
        .unwrap();
    root.query_drop("GRANT ALL ON t_weak.* TO 'weak'@'localhost'")
        .unwrap();
    let url = ctx.url_as("weak", "Pw-weak-1", "t_weak");
    for feature in ["general-log", "audit"] {
        let o = ctx.run(&[
            "run",
            "--target",
            &url,
            "--feature",
            feature,
            "--threads",
            "1",
        ]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(stderr.contains("Nothing was changed"), "{stderr}");
        assert!(!stderr.contains("Pw-weak-1"), "password printed: {stderr}");
    }
    assert_eq!(ctx.var("general_log"), "0");
    assert_eq!(
        ctx.count("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 't_weak'"),
        0,
        "no tables prepared before the privilege check"
    );
}

fn a_wrong_password_gets_exit_2_without_echoing_it(ctx: &Ctx) {
    let o = ctx.run(&[
        "bench",
        "--target",
        &ctx.url_as("weak", "Xyzzy-wrong", "t_weak"),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(stderr.contains("Access denied"), "{stderr}");
    assert!(!stderr.contains("Xyzzy-wrong"), "{stderr}");
}

fn features_reports_support_on_the_target(ctx: &Ctx) {
    let o = ctx.run(&["features", "--target", &ctx.url("")]);
    ok(&o);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let line = |name: &str| {
        stdout
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or("")
            .to_string()
    };
    assert!(line("general-log").contains(" yes "), "{stdout}");
    assert!(line("audit").contains(" yes "), "{stdout}");
    // log_bin is off on this server and it is not managed: binlog-sync needs a restart.
    assert!(line("binlog-sync").contains(" no "), "{stdout}");
}

fn bench_on_a_managed_server_prints_one_trial(ctx: &Ctx) {
    let o = ctx.run(&[
        "bench",
        "--target",
        "managed:mariadb",
        "--workload",
        "point-select",
        "--threads",
        "8",
        "--duration",
        "2s",
        "--warmup",
        "0.5s",
        "--table-size",
        "5000",
        "--json",
    ]);
    let v = json_of(&o);
    assert!(v["qps"].as_f64().unwrap() > 0.0);
    assert_eq!(v["target"]["kind"], "managed:mariadb");
    assert!(v["server_cpu_us_per_query"].as_f64().unwrap() > 0.0);
}

fn a_restart_only_feature_is_refused_on_a_server_dbtax_does_not_manage(ctx: &Ctx) {
    let o = ctx.run(&[
        "run",
        "--target",
        &ctx.url("t_restart"),
        "--feature",
        "binlog",
        "--threads",
        "1",
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr.contains("needs a server restart") && stderr.contains("--restart-cmd"),
        "{stderr}"
    );
    assert!(stderr.contains("Nothing was changed"), "{stderr}");
}

fn the_binary_log_is_switched_by_restarting_a_managed_server(ctx: &Ctx) {
    // Fixed-count trials (as the seed-binlog preset runs them): each restart is followed by a
    // settle run before the counted one.
    let file = ctx.file(
        "binlog.toml",
        r#"
name = "binlog-restart"
target = "managed:mariadb"
workload = { kind = "insert", tables = 1, table_size = 100 }
threads = [2]
queries_per_trial = 400
repeats = 2
[[variant]]
name = "off"
[[variant]]
name = "binlog"
feature = "binlog"
"#,
    );
    let out = ctx.out_dir("binlog");
    let o = ctx.run(&[
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    ok(&o);
    let v = validate_results(&out.join("results.json"));
    let written = |variant: &str| -> Vec<f64> {
        cell(&v, variant, 2)["trials"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                t["server_counters_per_query"]["Binlog_bytes_written"]
                    .as_f64()
                    .unwrap_or(0.0)
            })
            .collect()
    };
    // Every binlog trial ran on a server restarted with --log-bin, every "off" trial without.
    let (on, off) = (written("binlog"), written("off"));
    assert_eq!((on.len(), off.len()), (2, 2));
    assert!(on.iter().all(|b| *b > 50.0), "{}", cell(&v, "binlog", 2));
    assert!(off.iter().all(|b| *b == 0.0), "{}", cell(&v, "off", 2));
    assert_eq!(v["variants"][1]["server_opts"][0], "log-bin=binlog");
    for c in v["cells"].as_array().unwrap() {
        for t in c["trials"].as_array().unwrap() {
            assert_eq!(
                t["queries"], 400,
                "every counted trial ran exactly its 400 inserts"
            );
        }
    }
}

fn factors_in_a_file_report_each_factor_within_the_other(ctx: &Ctx) {
    let file = ctx.file(
        "factors.toml",
        r#"
name = "log-x-flush"
workload = { kind = "read-write", tables = 1, table_size = 2000 }
threads = [2]
trial = "0.5s"
warmup = "0.1s"
repeats = 2
[[factor]]
name = "log"
level = [ { name = "nolog" }, { name = "glog", feature = "general-log" } ]
[[factor]]
name = "flush"
level = [ { name = "f1", set = { innodb_flush_log_at_trx_commit = 1 } },
          { name = "f2", set = { innodb_flush_log_at_trx_commit = 2 } } ]
"#,
    );
    let out = ctx.out_dir("factors");
    let o = ctx.run(&[
        "run",
        file.to_str().unwrap(),
        "--target",
        &ctx.url("t_factors"),
        "--out",
        out.to_str().unwrap(),
    ]);
    ok(&o);
    let v = validate_results(&out.join("results.json"));
    let c = cell(&v, "glog/f2", 2);
    let effects = c["effects"].as_array().unwrap();
    assert_eq!(effects.len(), 2, "{c}");
    assert_eq!(effects[0]["factor"], "log");
    assert_eq!(effects[0]["against"], "nolog/f2");
    assert_eq!(effects[1]["against"], "glog/f1");
    assert_eq!(v["variants"][3]["baseline"], "nolog/f2");
    assert_eq!(ctx.var("innodb_flush_log_at_trx_commit"), "1", "restored");
    assert_eq!(ctx.var("general_log"), "0", "restored");
}

fn the_disk_guard_stops_a_run_before_the_log_passes_its_limit(ctx: &Ctx) {
    let out = ctx.out_dir("guard");
    let mut args = ctx.run_args("t_guard", &["general-log"], "2", "20", &out);
    args.extend(["--max-log-bytes".to_string(), "20k".to_string()]);
    let o = ctx.run(&args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(stderr.contains("--max-log-bytes"), "{stderr}");
    assert_eq!(
        ctx.var("general_log"),
        "0",
        "restored after the guard stopped the run"
    );
    let v = validate_results(&out.join("results.json"));
    assert_eq!(v["complete"], false);
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

type Scenario = (&'static str, fn(&Ctx));

fn main() {
    let scenarios: &[Scenario] = &[
        (
            "bench_prints_one_trial_as_json_over_the_socket",
            bench_prints_one_trial_as_json_over_the_socket,
        ),
        ("tcp_means_tcp", tcp_means_tcp),
        (
            "query_workload_stops_after_exactly_n_queries",
            query_workload_stops_after_exactly_n_queries,
        ),
        (
            "sysbench_tables_are_reused_as_they_are",
            sysbench_tables_are_reused_as_they_are,
        ),
        (
            "dry_run_prints_statements_and_changes_nothing",
            dry_run_prints_statements_and_changes_nothing,
        ),
        (
            "run_measures_and_restores_every_setting",
            run_measures_and_restores_every_setting,
        ),
        (
            "a_bad_out_directory_fails_before_anything_changes",
            a_bad_out_directory_fails_before_anything_changes,
        ),
        (
            "audit_plugin_is_installed_for_the_run_and_removed_after",
            audit_plugin_is_installed_for_the_run_and_removed_after,
        ),
        (
            "ctrl_c_restores_settings_and_keeps_partial_results",
            ctrl_c_restores_settings_and_keeps_partial_results,
        ),
        (
            "kill_9_then_restore_puts_settings_back",
            kill_9_then_restore_puts_settings_back,
        ),
        (
            "a_user_without_privileges_gets_exit_2_and_nothing_changes",
            a_user_without_privileges_gets_exit_2_and_nothing_changes,
        ),
        (
            "a_wrong_password_gets_exit_2_without_echoing_it",
            a_wrong_password_gets_exit_2_without_echoing_it,
        ),
        (
            "features_reports_support_on_the_target",
            features_reports_support_on_the_target,
        ),
        (
            "bench_on_a_managed_server_prints_one_trial",
            bench_on_a_managed_server_prints_one_trial,
        ),
        (
            "a_restart_only_feature_is_refused_on_a_server_dbtax_does_not_manage",
            a_restart_only_feature_is_refused_on_a_server_dbtax_does_not_manage,
        ),
        (
            "the_binary_log_is_switched_by_restarting_a_managed_server",
            the_binary_log_is_switched_by_restarting_a_managed_server,
        ),
        (
            "factors_in_a_file_report_each_factor_within_the_other",
            factors_in_a_file_report_each_factor_within_the_other,
        ),
        (
            "the_disk_guard_stops_a_run_before_the_log_passes_its_limit",
            the_disk_guard_stops_a_run_before_the_log_passes_its_limit,
        ),
    ];
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if std::env::args().any(|a| a == "--list") {
        for (name, _) in scenarios {
            println!("{name}: test");
        }
        return;
    }
    let started = Instant::now();
    let work = tempfile::tempdir().unwrap();
    let port = free_port();
    let server = ManagedServer::start(&ManagedConfig {
        port: Some(port),
        ..Default::default()
    })
    .expect("starting the test MariaDB (make test installs mariadb-server)");
    let ctx = Ctx {
        socket: server.socket(),
        port,
        state_dir: work.path().join("state"),
        work: work.path().to_path_buf(),
    };
    let selected: Vec<&Scenario> = scenarios
        .iter()
        .filter(|(n, _)| filters.is_empty() || filters.iter().any(|f| n.contains(f.as_str())))
        .collect();
    println!("\nrunning {} tests", selected.len());
    let mut failed = vec![];
    for (name, f) in &selected {
        let t = Instant::now();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&ctx)));
        let verdict = if result.is_ok() { "ok" } else { "FAILED" };
        println!(
            "test {name} ... {verdict} ({:.1}s)",
            t.elapsed().as_secs_f64()
        );
        if result.is_err() {
            failed.push(*name);
        }
    }
    drop(server);
    let passed = selected.len() - failed.len();
    println!(
        "\ntest result: {}. {passed} passed; {} failed; 0 ignored; 0 measured; {} filtered out; finished in {:.2}s\n",
        if failed.is_empty() { "ok" } else { "FAILED" },
        failed.len(),
        scenarios.len() - selected.len(),
        started.elapsed().as_secs_f64()
    );
    if !failed.is_empty() {
        eprintln!("failures: {failed:?}");
        std::process::exit(101);
    }
}
