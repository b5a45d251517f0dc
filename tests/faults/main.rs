//! Fault injection against a real MariaDB that this test starts (and kills, and restarts):
//! whatever happens to a run, the server's settings end equal to the originals and no
//! result is lost. The server starts with `long_query_time=2.5` and `log_output=TABLE` in
//! its options, so a restore that falls back to a default shows, and so do values that a
//! restart of the server would bring back.
//!
//! Each scenario prints its count ("kill points: 20/20 restored"); the harness prints
//! libtest's summary line.

mod breaks;
mod capture;
#[path = "../common/mod.rs"]
mod common;
mod identity;

use common::text;
use dbtax::server::ManagedConfig;
use dbtax::server::mysql::managed::ManagedServer;
use mysql::prelude::Queryable;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The settings dbtax may touch in these runs, with the values the server starts with.
const ORIGINALS: [(&str, &str); 5] = [
    ("general_log", "0"),
    ("slow_query_log", "0"),
    ("long_query_time", "2.500000"),
    ("log_output", "TABLE"),
    ("general_log_file", ""),
];

struct Ctx {
    server: Mutex<ManagedServer>,
    socket: PathBuf,
    port: u16,
    state_dir: PathBuf,
    work: PathBuf,
}

impl Ctx {
    fn socket_url(&self, schema: &str) -> String {
        format!(
            "mysql://root@localhost/{schema}?socket={}",
            self.socket.display()
        )
    }

    fn tcp_url(&self, schema: &str) -> String {
        format!("mysql://root@127.0.0.1:{}/{schema}", self.port)
    }

    fn root(&self) -> mysql::Conn {
        common::root(&self.socket)
    }

    fn var(&self, name: &str) -> String {
        common::global_var(&self.socket, name)
    }

    fn audit_loaded(&self) -> bool {
        let n: Option<u64> = self
            .root()
            .query_first(
                "SELECT COUNT(*) FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'SERVER_AUDIT'",
            )
            .unwrap();
        n.unwrap_or(0) > 0
    }

    /// Every touched setting as the server started with it, no plugin, no journal (here or
    /// on the server). Err: what differs.
    fn as_found(&self, originals: &[(String, String)]) -> Result<(), String> {
        let mut wrong = vec![];
        for (k, v) in originals {
            let now = self.var(k);
            if &now != v {
                wrong.push(format!("{k} = {now} (was {v})"));
            }
        }
        if self.audit_loaded() {
            wrong.push("the audit plugin is still loaded".into());
        }
        if self.journals() > 0 {
            wrong.push("a local journal is left".into());
        }
        let mut root = self.root();
        let schemas: Vec<String> = root
            .query(
                "SELECT TABLE_SCHEMA FROM information_schema.TABLES WHERE TABLE_NAME = 'dbtax_journal'",
            )
            .unwrap();
        for schema in schemas {
            let rows: Option<u64> = root
                .query_first(format!("SELECT COUNT(*) FROM `{schema}`.dbtax_journal"))
                .unwrap();
            if rows.unwrap_or(0) > 0 {
                wrong.push(format!("a journal is left on the server, in {schema}"));
            }
        }
        if wrong.is_empty() {
            Ok(())
        } else {
            Err(wrong.join(", "))
        }
    }

    fn originals(&self) -> Vec<(String, String)> {
        ORIGINALS
            .iter()
            .map(|(k, _)| (k.to_string(), self.var(k)))
            .collect()
    }

    fn dbtax(&self) -> Command {
        common::dbtax(&self.state_dir)
    }

    fn run(&self, args: &[String]) -> Output {
        self.dbtax().args(args).output().expect("running dbtax")
    }

    fn spawn(&self, args: &[String]) -> Child {
        self.dbtax()
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn journals(&self) -> usize {
        std::fs::read_dir(self.state_dir.join("journal"))
            .map(|d| {
                d.filter(|e| {
                    e.as_ref()
                        .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "json"))
                })
                .count()
            })
            .unwrap_or(0)
    }

    fn restore(&self) -> Output {
        self.run(&["restore".into(), "--target".into(), self.socket_url("")])
    }
}

/// Replace a flag's value in an argument list (clap refuses a flag given twice).
fn set_arg(args: &mut Vec<String>, flag: &str, value: &str) {
    match args.iter().position(|a| a == flag) {
        Some(i) => args[i + 1] = value.to_string(),
        None => args.extend([flag.to_string(), value.to_string()]),
    }
}

fn wait_child(child: Child, limit: Duration) -> Output {
    let pid = child.id();
    let start = Instant::now();
    let waiter = std::thread::spawn(move || child.wait_with_output().unwrap());
    while !waiter.is_finished() {
        if start.elapsed() > limit {
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            panic!("dbtax (pid {pid}) did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    waiter.join().unwrap()
}

/// A small deterministic generator (the suite's kill points are seeded and replayable).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

/// 20 seeded kill points across SIGINT, SIGTERM and SIGKILL (then `dbtax restore`), at
/// random moments from start-up to the last block.
fn kill_points_restore_every_setting(ctx: &Ctx) {
    let originals = ctx.originals();
    let mut rng = Lcg(20261130);
    let mut restored = 0;
    let mut failures = vec![];
    const POINTS: usize = 20;
    for i in 0..POINTS {
        let signal = [libc::SIGINT, libc::SIGTERM, libc::SIGKILL][(rng.next() % 3) as usize];
        let delay = Duration::from_millis(100 + rng.next() % 3500);
        let features: &[&str] = if i % 4 == 3 {
            &["audit", "slow-log"]
        } else {
            &["general-log", "slow-log"]
        };
        let out = ctx.work.join(format!("kill-{i}"));
        let args = common::run_args(&ctx.socket_url("f_kill"), features, "2", "4", &out);
        let child = ctx.spawn(&args);
        std::thread::sleep(delay);
        unsafe { libc::kill(child.id() as i32, signal) };
        let o = wait_child(child, Duration::from_secs(90));
        let name = match signal {
            libc::SIGINT => "SIGINT",
            libc::SIGTERM => "SIGTERM",
            _ => "SIGKILL",
        };
        let mut verdict = match (signal, o.status.code()) {
            // Killed: nothing ran to restore; `dbtax restore` puts everything back.
            (libc::SIGKILL, _) => {
                let r = ctx.restore();
                if r.status.success() {
                    Ok(())
                } else {
                    Err(format!("restore failed: {}", text(&r)))
                }
            }
            // The run may have finished before the signal: that is fine too.
            (_, Some(130)) | (_, Some(0)) => Ok(()),
            _ => Err(format!("unexpected exit: {}", text(&o))),
        };
        if verdict.is_ok() {
            verdict = ctx.as_found(&originals);
        }
        // No result is lost: whatever results.json was written is whole and valid.
        if verdict.is_ok() && out.join("results.json").exists() {
            let v = common::validate_results(&out.join("results.json"));
            if o.status.code() == Some(130) && v["complete"] != false {
                verdict = Err("an interrupted run claims to be complete".into());
            }
        }
        println!(
            "  kill point {i:2}: {name:7} after {:4} ms → {}",
            delay.as_millis(),
            match &verdict {
                Ok(()) => "restored".to_string(),
                Err(e) => format!("NOT RESTORED: {e}"),
            }
        );
        match verdict {
            Ok(()) => restored += 1,
            Err(e) => failures.push(format!("kill point {i} ({name}): {e}")),
        }
    }
    println!("kill points: {restored}/{POINTS} restored");
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Two runs started at the same instant on one server, one through its socket and one
/// through TCP: one runs, the other is refused with exit 2; three times.
fn two_runs_at_once_through_two_spellings(ctx: &Ctx) {
    let originals = ctx.originals();
    let mut good = 0;
    for i in 0..3 {
        let a = common::run_args(
            &ctx.socket_url("f_twin_a"),
            &["slow-log"],
            "2",
            "2",
            &ctx.work.join(format!("twin-a-{i}")),
        );
        let b = common::run_args(
            &ctx.tcp_url("f_twin_b"),
            &["general-log"],
            "2",
            "2",
            &ctx.work.join(format!("twin-b-{i}")),
        );
        let (ca, cb) = (ctx.spawn(&a), ctx.spawn(&b));
        let (oa, ob) = (
            wait_child(ca, Duration::from_secs(120)),
            wait_child(cb, Duration::from_secs(120)),
        );
        let codes = [oa.status.code(), ob.status.code()];
        let loser = if codes == [Some(0), Some(2)] {
            &ob
        } else if codes == [Some(2), Some(0)] {
            &oa
        } else {
            panic!(
                "round {i}: expected one run and one refusal, got {codes:?}\nA: {}\nB: {}",
                text(&oa),
                text(&ob)
            );
        };
        let why = String::from_utf8_lossy(&loser.stderr);
        assert!(why.contains("another dbtax"), "round {i}: {why}");
        // PROCESSLIST's TIME is not a connection's age: never worded as one.
        assert!(!why.contains("connected"), "round {i}: {why}");
        assert!(why.contains("Nothing was changed"), "round {i}: {why}");
        ctx.as_found(&originals)
            .unwrap_or_else(|e| panic!("round {i}: {e}"));
        good += 1;
    }
    println!("simultaneous runs: {good}/3 one ran, one was refused, settings as found");
}

/// The general log on an 8 MB tmpfs, 10-second trials: the guard stops the run before the
/// filesystem passes 90%, and the settings come back.
fn the_disk_guard_keeps_a_small_filesystem_from_filling(ctx: &Ctx) {
    let mnt = ctx.work.join("small-fs");
    if let Err(why) = mount_tmpfs(&mnt, "size=8m") {
        println!("disk guard: SKIPPED, {why}");
        return;
    }
    // The server writes there as its own user (root when the suite runs as root).
    let out = ctx.work.join("disk");
    let peak = guarded_run(ctx, &mnt.join("general.log"), &mnt, &out, "f_disk");
    let v = common::validate_results(&out.join("results.json"));
    assert_eq!(v["complete"], false);
    println!(
        "disk guard: stopped at {peak:.1}% of an 8 MB filesystem (limit 90%), settings as found"
    );
}

/// A general-log run with 10-second trials whose log file is `log` (on the small filesystem
/// mounted at `mnt`, perhaps through a link): the guard must stop it (exit 1, "10% free")
/// before that filesystem passes 90%, and every setting must come back. Unmounts `mnt`.
/// Returns the peak use seen, in percent.
fn guarded_run(ctx: &Ctx, log: &Path, mnt: &Path, out: &Path, user: &str) -> f64 {
    let old_file = ctx.var("general_log_file");
    ctx.root()
        .query_drop(format!("SET GLOBAL general_log_file = '{}'", log.display()))
        .unwrap();
    let originals = ctx.originals();
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (peak, stop, mnt) = (peak.clone(), stop.clone(), mnt.to_path_buf());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if let Some(pct) = used_per_mille(&mnt) {
                    peak.fetch_max(pct, std::sync::atomic::Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let mut args = common::run_args(&ctx.socket_url(user), &["general-log"], "4", "20", out);
    set_arg(&mut args, "--trial", "10s");
    set_arg(&mut args, "--warmup", "0.5s");
    let o = ctx.run(&args);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    watcher.join().unwrap();
    let peak = peak.load(std::sync::atomic::Ordering::Relaxed) as f64 / 10.0;
    let restored = ctx.as_found(&originals);
    ctx.root()
        .query_drop(format!("SET GLOBAL general_log_file = '{old_file}'"))
        .unwrap();
    let _ = Command::new("umount").arg(mnt).status();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("10% free"), "{stderr}");
    assert!(peak < 90.0, "the filesystem reached {peak:.1}% used");
    restored.unwrap();
    peak
}

/// Mount a tmpfs of the suite's own at `dir` (created), with these options.
fn mount_tmpfs(dir: &Path, options: &str) -> Result<(), String> {
    std::fs::create_dir_all(dir).unwrap();
    match Command::new("mount")
        .args(["-t", "tmpfs", "-o", options, "tmpfs"])
        .arg(dir)
        .output()
    {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!(
            "cannot mount a tmpfs here: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!("no mount command: {e}")),
    }
}

/// Wait until `cond` holds, at most `limit`.
fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn used_per_mille(path: &Path) -> Option<u64> {
    let (free, total) = dbtax::host::fs_space(path)?;
    (total > 0).then(|| (total - free) * 1000 / total)
}

/// The server is killed (-9) in the middle of a run and started again: dbtax says what
/// happened, restores once the server answers, keeps the blocks it had.
fn the_server_dies_and_comes_back_mid_run(ctx: &Ctx) {
    let originals = ctx.originals();
    let out = ctx.work.join("crash");
    let args = common::run_args(&ctx.socket_url("f_crash"), &["slow-log"], "2", "30", &out);
    let child = ctx.spawn(&args);
    let start = Instant::now();
    while !std::fs::read_to_string(out.join("results.json"))
        .is_ok_and(|s| s.contains("\"trials\": [\n"))
    {
        assert!(start.elapsed() < Duration::from_secs(60), "no first block");
        std::thread::sleep(Duration::from_millis(50));
    }
    {
        let mut server = ctx.server.lock().unwrap();
        let pid = server.pid().expect("the test server runs");
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        std::thread::sleep(Duration::from_millis(1500));
        server
            .process()
            .restart(&[])
            .expect("restarting the test server");
    }
    let o = wait_child(child, Duration::from_secs(120));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    let first = stderr
        .lines()
        .find(|l| l.starts_with("Error:"))
        .unwrap_or("");
    assert!(
        first.contains("the server went away during trial")
            || first.contains("the server went away before trial"),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("Error:").count(),
        1,
        "said once, not twice: {stderr}"
    );
    // The driver's own wrappers never reach the words.
    assert!(
        !stderr.contains("CodecError") && !stderr.contains("DriverError"),
        "{stderr}"
    );
    ctx.as_found(&originals).unwrap();
    let v = common::validate_results(&out.join("results.json"));
    assert_eq!(v["complete"], false);
    let trials: usize = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["trials"].as_array().unwrap().len())
        .sum();
    assert!(trials >= 2, "the blocks before the crash are kept: {v}");
    println!("server crash: said once, restored after the restart, {trials} trials kept");
}

/// kill -9 while the tables are being filled: the next run never takes the half-filled
/// tables as complete.
fn kill_9_during_preparation_leaves_no_half_table(ctx: &Ctx) {
    let originals = ctx.originals();
    let out = ctx.work.join("prep");
    let mut args = common::run_args(&ctx.socket_url("f_prep"), &["general-log"], "1", "2", &out);
    set_arg(&mut args, "--table-size", "300000");
    set_arg(&mut args, "--tables", "2");
    let mut child = ctx.spawn(&args);
    let start = Instant::now();
    let staging = || -> u64 {
        ctx.root()
            .query_first(
                "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'f_prep' \
                 AND TABLE_NAME LIKE 'sbtest%staging'",
            )
            .unwrap()
            .unwrap_or(0)
    };
    while staging() == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "preparation never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    let complete: Option<u64> = ctx
        .root()
        .query_first(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'f_prep' \
             AND TABLE_NAME IN ('sbtest1', 'sbtest2')",
        )
        .unwrap();
    assert_eq!(complete, Some(0), "a half-filled table has its final name");
    ctx.as_found(&originals).unwrap();
    // The next run builds the tables whole and says so.
    let out2 = ctx.work.join("prep2");
    let mut args = common::run_args(&ctx.socket_url("f_prep"), &["general-log"], "1", "2", &out2);
    set_arg(&mut args, "--table-size", "3000");
    set_arg(&mut args, "--tables", "2");
    let o = ctx.run(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = common::validate_results(&out2.join("results.json"));
    for t in v["workload"]["tables_found"].as_array().unwrap() {
        assert_eq!(t["created"], true, "{t}");
        assert_eq!(t["max_id"], 3000, "{t}");
    }
    let rows: Option<u64> = ctx
        .root()
        .query_first("SELECT COUNT(*) FROM f_prep.sbtest2")
        .unwrap();
    assert_eq!(rows, Some(3000));
    ctx.as_found(&originals).unwrap();
    println!("kill -9 during preparation: no half-filled table taken, settings as found");
}

fn main() {
    // Kept alive until the harness returns: the scenarios' files live there.
    let work = tempfile::tempdir().unwrap();
    common::harness(
        crate::scenarios![Ctx;
        kill_points_restore_every_setting,
        two_runs_at_once_through_two_spellings,
        the_disk_guard_keeps_a_small_filesystem_from_filling,
        the_server_dies_and_comes_back_mid_run,
        kill_9_during_preparation_leaves_no_half_table,
        capture::ctrl_c_ends_a_capture_with_the_setting_back_and_its_file_written,
        capture::kill_9_of_a_capture_then_restore_puts_the_setting_back,
        capture::a_pool_connected_before_the_capture_is_captured,
        capture::a_capture_and_a_run_longer_than_wait_timeout_put_everything_back,
        capture::a_server_restarted_during_a_capture_is_waited_for,
        capture::a_captures_out_is_never_the_servers_log_nor_touched_before_the_checks,
        capture::a_capture_on_a_small_log_filesystem_stops_before_it_fills,
        capture::a_dbas_change_during_a_capture_is_said_as_left,
        breaks::slow_log_holds_log_output_in_every_variant,
        breaks::a_variant_that_undoes_its_feature_is_refused,
        breaks::values_the_server_would_refuse_are_bad_input,
        breaks::a_damaged_local_journal_falls_back_to_the_servers_copy,
        breaks::a_journal_table_the_user_cannot_read_is_refused,
        breaks::a_disabled_plugin_of_the_user_is_left_alone,
        breaks::the_disk_guard_follows_a_symlinked_log,
        breaks::a_closed_output_never_panics,
        breaks::ctrl_c_on_a_frozen_server_ends_in_bounded_time,
        breaks::a_full_state_directory_names_the_journal,
        breaks::a_panic_mid_run_restores_the_server_and_says_it_is_a_bug,
        breaks::a_killed_admin_connection_is_said_as_killed,
        identity::a_journal_is_never_applied_to_another_server,
        identity::a_copy_that_carries_the_stamp_is_not_taken_for_its_server,
        identity::a_stale_local_journal_is_retired_not_applied_again,
        identity::a_setting_someone_changed_since_is_left_alone,
        identity::a_server_moved_to_another_port_is_restored_where_it_is,
        ],
        || {
            let port = common::free_port();
            let server = ManagedServer::start(&ManagedConfig {
                port: Some(port),
                server_opts: vec!["long-query-time=2.5".into(), "log-output=TABLE".into()],
                ..Default::default()
            })
            .expect("starting the test MariaDB (make test installs mariadb-server)");
            let ctx = Ctx {
                socket: server.socket(),
                server: Mutex::new(server),
                port,
                state_dir: work.path().join("state"),
                work: work.path().to_path_buf(),
            };
            for (k, v) in ORIGINALS {
                if !v.is_empty() {
                    assert_eq!(ctx.var(k), v, "the test server's starting value of {k}");
                }
            }
            ctx
        },
    );
}
