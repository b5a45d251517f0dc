//! Against a real PostgreSQL: one cluster for this whole test binary, started by dbtax's own
//! managed-cluster code (as the `postgres` system user when the tests run as root) on a
//! private socket and 127.0.0.1 at a free port, stopped by its pid at the end. dbtax reaches
//! it by URL, as a user's own server: the journal, the exact restore of postgresql.auto.conf
//! and the privilege probe are the real ones. The managed demo and the missing-pgaudit check
//! start clusters of their own through dbtax.

mod breaks;
mod capacity;
mod clients;
#[path = "../common/mod.rs"]
mod common;
mod live;
mod locks;
mod replay;

use common::{text, validate_results};
use dbtax::server::ManagedConfig;
use dbtax::server::postgres::managed::{PgManaged, find_bin_dir};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

struct Ctx {
    server: PgManaged,
    state_dir: PathBuf,
    work: PathBuf,
}

impl Ctx {
    fn url(&self, db: &str) -> String {
        self.url_as("postgres", db)
    }

    fn url_as(&self, user: &str, db: &str) -> String {
        format!(
            "postgres://{user}@localhost:{}/{db}?host={}",
            self.server.port(),
            self.server.socket_dir().display()
        )
    }

    fn sql(&self, db: &str) -> postgres::Client {
        self.server
            .config(db)
            .connect(postgres::NoTls)
            .expect("connecting to the test PostgreSQL")
    }

    /// A setting as a new connection sees it.
    fn show(&self, name: &str) -> String {
        self.sql("postgres")
            .query_one(&format!("SHOW {name}"), &[])
            .unwrap()
            .get(0)
    }

    fn count(&self, db: &str, table: &str) -> i64 {
        self.sql(db)
            .query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .unwrap()
            .get(0)
    }

    fn auto_conf(&self) -> Vec<u8> {
        std::fs::read(self.server.datadir().join("postgresql.auto.conf")).unwrap()
    }

    fn dbtax(&self) -> Command {
        common::dbtax(&self.state_dir)
    }

    fn run<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> Output {
        self.dbtax().args(args).output().expect("running dbtax")
    }

    /// `dbtax run` of select-only with `features` against off, in database `db`.
    fn run_args(&self, db: &str, features: &[&str], trial: &str, repeats: &str) -> Vec<String> {
        let mut a: Vec<String> = ["run", "--target", &self.url(db), "-w", "select-only"]
            .map(String::from)
            .to_vec();
        for f in features {
            a.extend(["--feature".to_string(), f.to_string()]);
        }
        let out = self.work.join(format!("out-{}", a.len() + repeats.len()));
        a.extend(
            [
                "--threads",
                "2",
                "--repeats",
                repeats,
                "--trial",
                trial,
                "--warmup",
                "0.2s",
                "--no-warmup-round",
                "--out",
            ]
            .map(String::from),
        );
        a.push(out.display().to_string());
        a
    }

    fn journals(&self) -> usize {
        std::fs::read_dir(self.state_dir.join("journal"))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    /// Start `dbtax` in the background and wait until a new connection sees `name = want`.
    fn spawn_until(&self, args: &[String], name: &str, want: &str) -> std::process::Child {
        let mut child = self
            .dbtax()
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while self.show(name) != want {
            if let Ok(Some(s)) = child.try_wait() {
                let mut err = String::new();
                std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
                panic!("dbtax ended ({s}) before {name} = {want}: {err}");
            }
            assert!(
                start.elapsed() < Duration::from_secs(90),
                "{name} never became {want}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        child
    }
}

fn ok(o: &Output) {
    assert_eq!(o.status.code(), Some(0), "{}", text(o));
}

/// A setting preset with ALTER SYSTEM before each safety scenario: restore must bring its
/// line in postgresql.auto.conf back as it was, and leave no line of its own.
fn preset_auto_conf(ctx: &Ctx) -> Vec<u8> {
    let mut c = ctx.sql("postgres");
    c.batch_execute("ALTER SYSTEM SET log_min_duration_statement = '250ms'")
        .unwrap();
    c.batch_execute("SELECT pg_reload_conf()").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let conf = ctx.auto_conf();
    assert!(String::from_utf8_lossy(&conf).contains("log_min_duration_statement = '250ms'"));
    conf
}

fn pgbench() -> PathBuf {
    find_bin_dir(None).unwrap().join("pgbench")
}

/// `dbtax bench --json` of a pgbench workload on database pgb: 2 clients, 1 s.
fn bench_pgb(ctx: &Ctx, workload: &str) -> serde_json::Value {
    let o = ctx.run(&[
        "bench",
        "--target",
        &ctx.url("pgb"),
        "-w",
        workload,
        "--threads",
        "2",
        "--duration",
        "1s",
        "--warmup",
        "0.2s",
        "--json",
    ]);
    ok(&o);
    serde_json::from_slice(&o.stdout).unwrap()
}

fn bench_reuses_pgbench_tables_with_their_row_counts_unchanged(ctx: &Ctx) {
    ctx.sql("postgres")
        .batch_execute("CREATE DATABASE pgb")
        .unwrap();
    let init = Command::new(pgbench())
        .args(["-i", "-s", "2", "-q", "-h"])
        .arg(ctx.server.socket_dir())
        .args([
            "-p",
            &ctx.server.port().to_string(),
            "-U",
            "postgres",
            "pgb",
        ])
        .output()
        .unwrap();
    ok(&init);
    let counts = || {
        [
            "pgbench_accounts",
            "pgbench_branches",
            "pgbench_tellers",
            "pgbench_history",
        ]
        .map(|t| ctx.count("pgb", t))
    };
    let before = counts();
    assert_eq!(before, [200_000, 2, 20, 0]);
    let v = bench_pgb(ctx, "select-only");
    assert_eq!(v["workload"]["scale_found"], 2, "{v}");
    assert_eq!(v["workload"]["tables_found"][0]["created"], false);
    assert!(v["queries"].as_u64().unwrap() > 100, "{v}");
    assert!(v["server_cpu_us_per_query"].as_f64().unwrap() > 0.0, "{v}");
    assert_eq!(counts(), before, "select-only changed the pgbench tables");
    // tpcb-like writes: a history row per transaction, the other tables' rows stay.
    let v = bench_pgb(ctx, "tpcb-like");
    let events = v["tps"].as_f64().unwrap() * v["duration_s"].as_f64().unwrap();
    let after = counts();
    assert_eq!(after[..3], before[..3]);
    assert!(
        after[3] as f64 >= events * 0.9,
        "{after:?} after {events} transactions"
    );
    // 7 statements per transaction (BEGIN, 3 updates, a select, an insert, END), and WAL.
    assert!(
        (v["queries"].as_f64().unwrap() / events - 7.0).abs() < 0.1,
        "{v}"
    );
    assert!(v["wal_bytes_per_query"].as_f64().unwrap() > 10.0, "{v}");
}

fn a_run_measures_statement_logging_and_puts_auto_conf_back_byte_for_byte(ctx: &Ctx) {
    let conf = preset_auto_conf(ctx);
    // Three blocks: the fewest that give an interval.
    let args = ctx.run_args("dbtax", &["log-statement", "log-min-duration"], "0.5s", "3");
    let o = ctx.run(&args);
    ok(&o);
    let out = args.last().unwrap();
    let v = validate_results(&Path::new(out).join("results.json"));
    for f in ["log-statement", "log-min-duration"] {
        let c = v["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["variant"] == f)
            .unwrap();
        assert!(
            c["log_bytes_per_query_median"].as_f64().unwrap() > 20.0,
            "{c}"
        );
        assert!(
            c["server_cpu_us_per_query_median"].as_f64().unwrap() > 0.0,
            "{c}"
        );
        assert!(c["overhead"]["ci95_pct"].is_array(), "{c}");
    }
    assert_eq!(v["target"]["kind"], "postgres");
    // Nobody else used the cluster: no trial saw another client's session.
    assert!(
        !v["warnings"].to_string().contains("other clients"),
        "{}",
        v["warnings"]
    );
    assert_eq!(ctx.auto_conf(), conf, "postgresql.auto.conf changed");
    assert_eq!(ctx.show("log_statement"), "none");
    assert_eq!(ctx.show("log_min_duration_statement"), "250ms");
    assert_eq!(ctx.journals(), 0);
    // A clean run leaves no journal table (nor dbtax's schema) in the user's database.
    let left: bool = ctx
        .sql("dbtax")
        .query_one(
            "SELECT to_regclass('dbtax.dbtax_journal') IS NULL \
             AND to_regclass('public.dbtax_journal') IS NULL",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(left, "a journal table is left");
}

/// `--at-rate`: log_statement at a fixed rate, and the bill there (the log a day with its
/// interval, the p99 added), said first; postgresql.auto.conf as found after.
fn the_bill_at_a_rate_is_said_first(ctx: &Ctx) {
    let conf = preset_auto_conf(ctx);
    let mut args = ctx.run_args("dbtax", &["log-statement"], "0.5s", "3");
    args.extend(["--at-rate".into(), "400/s".into()]);
    let o = ctx.run(&args);
    ok(&o);
    let out = args[args.iter().position(|a| a == "--out").unwrap() + 1].clone();
    let v = validate_results(&Path::new(&out).join("results.json"));
    let bill = v["bill"].as_array().unwrap();
    assert_eq!(bill.len(), 1, "{bill:?}");
    let b = &bill[0];
    assert_eq!(b["variant"], "log-statement");
    assert_eq!(b["level"], "400/s");
    let day = &b["log_bytes_per_day"];
    assert!(day["ci95"][0].as_f64().unwrap() > 0.0, "{b}");
    // 400 events of select-only a second, ~100 bytes of log each: gigabytes a day.
    assert!(day["value"].as_f64().unwrap() > 1e9, "{b}");
    assert!(b["latency_delta_ms"]["p99"]["ci95"].is_array(), "{b}");
    let words = text(&o);
    let first = words
        .lines()
        .find(|l| l.starts_with("At "))
        .unwrap_or_default();
    assert!(first.contains("of log a day"), "{words}");
    assert_eq!(ctx.auto_conf(), conf);
    assert_eq!(ctx.show("log_statement"), "none");
    assert_eq!(ctx.journals(), 0);
}

fn ctrl_c_restores_auto_conf_byte_for_byte(ctx: &Ctx) {
    let conf = preset_auto_conf(ctx);
    let args = ctx.run_args("dbtax", &["log-statement"], "2s", "20");
    let child = ctx.spawn_until(&args, "log_statement", "all");
    // SAFETY: a pid we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    assert_eq!(ctx.auto_conf(), conf);
    assert_eq!(ctx.show("log_statement"), "none");
    assert_eq!(ctx.journals(), 0);
}

fn kill_9_then_restore_puts_auto_conf_back(ctx: &Ctx) {
    let conf = preset_auto_conf(ctx);
    let args = ctx.run_args("dbtax", &["log-statement"], "2s", "20");
    let mut child = ctx.spawn_until(&args, "log_statement", "all");
    child.kill().unwrap();
    child.wait().unwrap();
    let changed = ctx.auto_conf();
    assert_ne!(changed, conf, "the run had changed postgresql.auto.conf");
    // A new run refuses, and changes nothing.
    let o = ctx.run(&args);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("dbtax restore"), "{}", text(&o));
    assert_eq!(ctx.auto_conf(), changed);
    let o = ctx.run(&["restore", "--target", &ctx.url("dbtax")]);
    ok(&o);
    assert_eq!(ctx.auto_conf(), conf, "{}", text(&o));
    assert_eq!(ctx.show("log_statement"), "none");
    assert_eq!(ctx.show("log_min_duration_statement"), "250ms");
    assert_eq!(ctx.journals(), 0);
}

fn a_user_without_privileges_gets_exit_2_and_nothing_changes(ctx: &Ctx) {
    let conf = ctx.auto_conf();
    ctx.sql("postgres")
        .batch_execute("CREATE ROLE plain LOGIN")
        .unwrap();
    let mut args = ctx.run_args("dbtax", &["log-statement"], "0.5s", "2");
    args[2] = ctx.url_as("plain", "dbtax");
    let o = ctx.run(&args);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let msg = text(&o);
    assert!(msg.contains("GRANT ALTER SYSTEM"), "{msg}");
    assert!(!msg.contains("panicked"), "{msg}");
    assert_eq!(ctx.auto_conf(), conf);
    assert_eq!(ctx.show("log_statement"), "none");
}

/// A copy of the installed PostgreSQL without pgaudit.so: PostgreSQL finds its libraries
/// relative to its binary, so a binary copied beside a lib folder of links is another
/// installation.
fn install_without_pgaudit(work: &Path, root: &Path) -> PathBuf {
    let bin = find_bin_dir(None).unwrap();
    let version = bin.parent().unwrap();
    let major = version.file_name().unwrap().to_str().unwrap();
    let fake = root.join("lib/postgresql").join(major);
    std::fs::create_dir_all(fake.join("bin")).unwrap();
    std::fs::create_dir_all(fake.join("lib")).unwrap();
    for b in ["postgres", "initdb"] {
        std::fs::copy(bin.join(b), fake.join("bin").join(b)).unwrap();
    }
    for e in std::fs::read_dir(version.join("lib")).unwrap().flatten() {
        if e.file_name() != "pgaudit.so" {
            std::os::unix::fs::symlink(e.path(), fake.join("lib").join(e.file_name())).unwrap();
        }
    }
    std::fs::create_dir_all(root.join("share/postgresql")).unwrap();
    std::os::unix::fs::symlink(
        Path::new("/usr/share/postgresql").join(major),
        root.join("share/postgresql").join(major),
    )
    .unwrap();
    // The server runs as the postgres user: it must reach the copy (a test's temporary
    // folder is private to its owner).
    for d in [
        work,
        root,
        &root.join("lib"),
        &root.join("lib/postgresql"),
        &fake,
        &fake.join("bin"),
    ] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    fake.join("bin/postgres")
}

fn pgaudit_missing_is_unsupported_and_names_the_package(ctx: &Ctx) {
    let root = ctx.work.join("pg-without-pgaudit");
    let bin = install_without_pgaudit(&ctx.work, &root);
    let o = ctx.run(&[
        "features",
        "--target",
        "managed:postgres",
        "--server-bin",
        bin.to_str().unwrap(),
    ]);
    ok(&o);
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("pgaudit"))
        .unwrap();
    assert!(line.contains(" no "), "{out}");
    assert!(line.contains("-pgaudit"), "names the package: {line}");
    assert!(
        out.lines()
            .any(|l| l.contains("log-statement") && l.contains(" yes ")),
        "{out}"
    );
    let o = ctx.run(&[
        "run",
        "--target",
        "managed:postgres",
        "--server-bin",
        bin.to_str().unwrap(),
        "--feature",
        "audit",
        "--dry-run",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("postgresql-") && text(&o).contains("pgaudit"),
        "{}",
        text(&o)
    );
}

fn the_managed_demo_answers_the_three_questions(ctx: &Ctx) {
    let out = ctx.work.join("demo");
    let o = ctx.run(&[
        "demo",
        "--quick",
        "--budget",
        "40s",
        "--target",
        "managed:postgres",
        "--out",
        out.to_str().unwrap(),
    ]);
    ok(&o);
    let v = validate_results(&out.join("results.json"));
    assert_eq!(v["target"]["kind"], "managed:postgres");
    // The demo runs pinned: server and load on disjoint CPUs (two or more here).
    if dbtax::host::cpus::allowed().len() >= 2 {
        assert_eq!(v["pinned"], true, "{}", v["cpus"]);
        let server = v["cpus"]["server"].as_array().unwrap();
        let load = v["cpus"]["load"].as_array().unwrap();
        assert!(!server.is_empty() && !load.is_empty(), "{}", v["cpus"]);
        assert!(server.iter().all(|c| !load.contains(c)), "{}", v["cpus"]);
    }
    let words = String::from_utf8_lossy(&o.stdout);
    for (f, said) in [
        ("general-log", "The statement log (log_statement = 'all')"),
        (
            "slow-log",
            "The duration log (log_min_duration_statement = 0)",
        ),
        ("audit", "The pgaudit extension (pgaudit.log = 'all')"),
    ] {
        assert!(words.contains(said), "the words name {said}: {words}");
        let c = v["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["variant"] == f && c["threads"] == 16)
            .unwrap_or_else(|| panic!("no {f} at 16 threads"));
        assert!(c["overhead"]["ci95_pct"].is_array(), "{c}");
        assert!(
            c["log_bytes_per_query_median"].as_f64().unwrap() > 20.0,
            "{c}"
        );
        assert!(
            c["server_cpu_us_per_query_median"].as_f64().unwrap() > 0.0,
            "{c}"
        );
    }
}

fn main() {
    let work = tempfile::tempdir().unwrap();
    common::harness(dbtax_scenarios(), || {
        let server = PgManaged::start(&ManagedConfig {
            port: Some(common::free_port()),
            ..Default::default()
        })
        .expect("starting the test PostgreSQL (make test installs postgresql-15)");
        Ctx {
            server,
            state_dir: work.path().join("state"),
            work: work.path().to_path_buf(),
        }
    });
}

/// Another client running statements through a run: its session is seen in
/// pg_stat_activity (another application name), every trial it ran through records it, their
/// server CPU per query is withheld (it is that client's too), and the warning says so.
fn another_clients_statements_withhold_the_server_cpu(ctx: &Ctx) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = Arc::new(AtomicBool::new(false));
    let mut config = ctx.server.config("postgres");
    config.application_name("another-client");
    let mut other = config.connect(postgres::NoTls).unwrap();
    let busy = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                other.simple_query("SELECT count(*) FROM pg_class").unwrap();
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let args = ctx.run_args("dbtax", &["log-statement"], "0.5s", "3");
    let o = ctx.run(&args);
    stop.store(true, Ordering::Relaxed);
    busy.join().unwrap();
    ok(&o);
    let v = validate_results(&Path::new(args.last().unwrap()).join("results.json"));
    let warned = v["warnings"].to_string();
    assert!(warned.contains("session(s) of other clients"), "{warned}");
    for c in v["cells"].as_array().unwrap() {
        // Every trial withheld: three, or more where blocks were set aside and kept after
        // all (a machine busy throughout).
        let trials = c["trials"].as_array().unwrap().len();
        assert!(trials >= 3, "{c}");
        assert_eq!(c["server_cpu_withheld_trials"], trials, "{c}");
        for t in c["trials"].as_array().unwrap() {
            assert!(t["other_sessions"].as_u64().unwrap() >= 1, "{t}");
            assert!(t["server_cpu_us_per_query"].is_null(), "{t}");
        }
    }
    assert_eq!(ctx.show("log_statement"), "none");
}

fn dbtax_scenarios() -> &'static [common::Scenario<Ctx>] {
    crate::scenarios![Ctx;
        bench_reuses_pgbench_tables_with_their_row_counts_unchanged,
        a_run_measures_statement_logging_and_puts_auto_conf_back_byte_for_byte,
        another_clients_statements_withhold_the_server_cpu,
        the_bill_at_a_rate_is_said_first,
        capacity::a_latency_objective_finds_each_variants_capacity_and_restores,
        ctrl_c_restores_auto_conf_byte_for_byte,
        kill_9_then_restore_puts_auto_conf_back,
        a_user_without_privileges_gets_exit_2_and_nothing_changes,
        pgaudit_missing_is_unsupported_and_names_the_package,
        the_managed_demo_answers_the_three_questions,
        breaks::a_hand_edited_auto_conf_comes_back_byte_for_byte,
        breaks::a_journal_table_the_login_cannot_read_is_refused,
        breaks::a_table_the_login_may_not_read_is_refused_naming_the_grant,
        breaks::the_restart_hint_names_this_engines_managed_target,
        breaks::a_restart_only_setting_left_running_is_named_then_finished,
        clients::the_lean_client_survives_big_rows_errors_and_terminated_backends,
        clients::the_lean_client_logs_in_with_password_md5_and_scram,
        clients::each_protocol_sends_what_libpq_sends,
        clients::a_tls_url_is_spoken_by_every_connection,
        replay::a_captured_statement_log_replays_with_its_cost_per_statement,
        replay::a_capture_by_dbtax_replays_and_leaves_the_conf_as_found,
        replay::a_capture_of_a_pool_in_csvlog_past_idle_session_timeout,
        locks::a_replay_of_harmful_statements_changes_nothing,
        locks::the_session_and_the_login_refuse_what_the_classifier_would_miss,
        locks::definer_code_and_quoted_settings_do_not_get_past_the_locks,
        locks::a_restore_drops_what_the_temporary_role_owns,
        live::live_finds_log_statements_cost_on_production_traffic,
    ]
}
