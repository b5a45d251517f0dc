//! `dbtax capture` interrupted, and in production's ordinary conditions: Ctrl-C puts the
//! setting back and writes what was logged until then; kill -9 leaves the journal, and `dbtax
//! restore` puts back what it names; a pool connected before the capture is captured; a
//! wait_timeout shorter than the capture, a server that restarts during it, a small log
//! filesystem, an `--out` that is the server's own log, a DBA's change while it runs. The
//! suite's server starts with log_output=TABLE and long_query_time=2.5: both must come back.

use super::*;

/// Start a capture of `secs` into `out`; returns it once the log is on, with its words so
/// far and the rest of them (read behind: a full pipe would stop it).
fn start_capture(
    ctx: &Ctx,
    out: &Path,
    secs: &str,
) -> (Child, String, std::thread::JoinHandle<String>) {
    let common::Capture {
        child,
        said,
        mut err,
    } = common::Capture::start(ctx.dbtax(), secs, &ctx.socket_url("f_capture"), out);
    let rest = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    assert_eq!(ctx.var("general_log"), "1", "{said}");
    assert_eq!(ctx.var("log_output"), "FILE", "{said}");
    (child, said, rest)
}

/// Three statements of a new connection.
fn marked(ctx: &Ctx, mark: &str) {
    let mut c = common::root(&ctx.socket);
    for _ in 0..3 {
        c.query_drop(format!("SELECT '{mark}'")).unwrap();
    }
}

pub fn ctrl_c_ends_a_capture_with_the_setting_back_and_its_file_written(ctx: &Ctx) {
    let originals = ctx.originals();
    let out = ctx.work.join("capture-ctrl-c.log");
    let (child, said, rest) = start_capture(ctx, &out, "120s");
    marked(ctx, "captured-before-ctrl-c");
    let started = Instant::now();
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = wait_child(child, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(130), "{said}{}", text(&o));
    let words = rest.join().unwrap();
    assert!(words.contains("the setting was put back"), "{words}");
    ctx.as_found(&originals).unwrap();
    let captured = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        captured.matches("SELECT 'captured-before-ctrl-c'").count(),
        3,
        "{captured}"
    );
    println!(
        "Ctrl-C on a capture: ended in {:.1} s, settings as found, {} bytes written",
        started.elapsed().as_secs_f64(),
        captured.len()
    );
}

pub fn kill_9_of_a_capture_then_restore_puts_the_setting_back(ctx: &Ctx) {
    let originals = ctx.originals();
    let out = ctx.work.join("capture-kill.log");
    let (child, said, _) = start_capture(ctx, &out, "120s");
    marked(ctx, "captured-before-kill");
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = wait_child(child, Duration::from_secs(20));
    // Left on, journaled.
    assert_eq!(ctx.var("general_log"), "1", "{said}");
    assert!(ctx.as_found(&originals).is_err());
    let o = ctx.restore();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    ctx.as_found(&originals).unwrap();
    println!("kill -9 of a capture: `dbtax restore` put every setting back");
}

/// A pool: `n` connections opened now, each running `SELECT '<mark> <i>'` on demand.
struct Pool(Vec<mysql::Conn>);

impl Pool {
    fn open(ctx: &Ctx, n: usize) -> Pool {
        Pool((0..n).map(|_| ctx.root()).collect())
    }

    fn run(&mut self, mark: &str) {
        for (i, c) in self.0.iter_mut().enumerate() {
            c.query_drop(format!("SELECT '{mark} {i}'")).unwrap();
        }
    }
}

/// Issue 50: an application whose connections were open before the capture began (every
/// pool's) is captured: MariaDB copies the slow log's switch and long_query_time into a
/// session when it connects, so the slow log saw none of them; the general log sees every
/// session. The words name the source and what it lacks; the settings come back.
pub fn a_pool_connected_before_the_capture_is_captured(ctx: &Ctx) {
    let originals = ctx.originals();
    let mut pool = Pool::open(ctx, 4);
    pool.run("before");
    let out = ctx.work.join("capture-pool.log");
    let (child, _said, rest) = start_capture(ctx, &out, "3s");
    pool.run("pooled");
    pool.run("pooled");
    let o = wait_child(child, Duration::from_secs(60));
    let words = format!("{}{}", text(&o), rest.join().unwrap());
    assert_eq!(o.status.code(), Some(0), "{words}");
    ctx.as_found(&originals).unwrap();
    let captured = std::fs::read_to_string(&out).unwrap();
    for i in 0..4 {
        assert_eq!(
            captured.matches(&format!("SELECT 'pooled {i}'")).count(),
            2,
            "session {i} of the pool: {captured}"
        );
    }
    assert!(!captured.contains("'before "), "{captured}");
    assert!(words.contains("the general log"), "{words}");
    assert!(words.contains("no Rows_sent"), "{words}");
    // The pool's, and the test's own checks of the setting (sessions of their own).
    let held: Vec<u64> = words
        .split("It holds ")
        .nth(1)
        .map(|rest| {
            rest.split_whitespace()
                .filter_map(|w| w.parse().ok())
                .take(2)
                .collect()
        })
        .unwrap_or_default();
    assert!(
        held.len() == 2 && held[0] >= 8 && held[1] >= 4,
        "{words}\n{captured}"
    );
    println!("a pool opened before the capture: its 4 sessions captured, settings as found");
}

/// Issue 50: a capture longer than the server's wait_timeout: the admin connection, idle
/// while the capture waits, is kept (its own session timeout), the setting is put back and
/// the journal removed; a run whose trial is longer than wait_timeout completes too.
pub fn a_capture_and_a_run_longer_than_wait_timeout_put_everything_back(ctx: &Ctx) {
    let originals = ctx.originals();
    let was: String = ctx.var("wait_timeout");
    ctx.root()
        .query_drop("SET GLOBAL wait_timeout = 2")
        .unwrap();
    let out = ctx.work.join("capture-wait.log");
    let (child, _said, rest) = start_capture(ctx, &out, "5s");
    marked(ctx, "captured-past-wait-timeout");
    let o = wait_child(child, Duration::from_secs(60));
    let words = format!("{}{}", text(&o), rest.join().unwrap());
    let run_out = ctx.work.join("run-wait");
    let mut args = common::run_args(
        &ctx.socket_url("f_wait"),
        &["general-log"],
        "1",
        "2",
        &run_out,
    );
    set_arg(&mut args, "--trial", "3s");
    let r = ctx.run(&args);
    ctx.root()
        .query_drop(format!("SET GLOBAL wait_timeout = {was}"))
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{words}");
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    ctx.as_found(&originals).unwrap();
    let captured = std::fs::read_to_string(&out).unwrap();
    assert_eq!(captured.matches("captured-past-wait-timeout").count(), 3);
    println!("wait_timeout = 2 s: a 5 s capture and 3 s trials complete, settings as found");
}

/// Issue 50: the server restarts while a capture waits: the capture waits for it as a run
/// does, reconnects, puts the setting back (the journal's, after a restart), copies what
/// was logged, and says what happened; no raw driver error.
pub fn a_server_restarted_during_a_capture_is_waited_for(ctx: &Ctx) {
    let originals = ctx.originals();
    let out = ctx.work.join("capture-restart.log");
    let (child, _said, rest) = start_capture(ctx, &out, "20s");
    marked(ctx, "captured-before-restart");
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
    let words = format!("{}{}", text(&o), rest.join().unwrap());
    assert_eq!(o.status.code(), Some(0), "{words}");
    assert!(words.contains("stopped answering"), "{words}");
    assert!(!words.contains("Broken pipe"), "{words}");
    ctx.as_found(&originals).unwrap();
    let captured = std::fs::read_to_string(&out).unwrap();
    assert_eq!(captured.matches("captured-before-restart").count(), 3);
    println!("a restart during a capture: waited for, restored, the statements before it copied");
}

/// Issue 50: `--out` never destroys a file: the server's own log is refused (any spelling
/// of its path) with its history intact, and a capture refused for another reason (another
/// run holds the lock) leaves an existing file as it was.
pub fn a_captures_out_is_never_the_servers_log_nor_touched_before_the_checks(ctx: &Ctx) {
    let originals = ctx.originals();
    let dir = ctx.work.join("out-guard");
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("general.log");
    let was = ctx.var("general_log_file");
    ctx.root()
        .query_drop(format!("SET GLOBAL general_log_file = '{}'", log.display()))
        .unwrap();
    std::fs::write(&log, "the log's history\n").unwrap();
    let spelled = dir.join(".").join("general.log");
    let o = ctx.run(&[
        "capture".into(),
        "--for".into(),
        "1s".into(),
        "--target".into(),
        ctx.socket_url("f_out"),
        "--out".into(),
        spelled.display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("the server's own log"), "{}", text(&o));
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .starts_with("the log's history")
    );
    // Another run holds the lock: the capture is refused, the existing file untouched.
    let keep = dir.join("kept.log");
    std::fs::write(&keep, "an earlier capture\n").unwrap();
    let mut holder = ctx.root();
    let held: Option<i64> = holder
        .query_first("SELECT GET_LOCK('dbtax.run', 0)")
        .unwrap();
    assert_eq!(held, Some(1));
    let o = ctx.run(&[
        "capture".into(),
        "--for".into(),
        "1s".into(),
        "--target".into(),
        ctx.socket_url("f_out"),
        "--out".into(),
        keep.display().to_string(),
    ]);
    drop(holder);
    ctx.root()
        .query_drop(format!("SET GLOBAL general_log_file = '{was}'"))
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(&keep).unwrap(),
        "an earlier capture\n"
    );
    ctx.as_found(&originals).unwrap();
    println!("--out: the server's log refused, an existing file untouched by a refused capture");
}

/// Issue 50: the log on a small filesystem, logging fast: the capture's guard, on the log's
/// rate, stops before the filesystem passes 90% (it used to reach 100% between two polls),
/// puts the setting back, and writes nothing that would fill it again.
pub fn a_capture_on_a_small_log_filesystem_stops_before_it_fills(ctx: &Ctx) {
    let mnt = ctx.work.join("small-capture-fs");
    if let Err(why) = super::mount_tmpfs(&mnt, "size=8m") {
        println!("capture disk guard: SKIPPED, {why}");
        return;
    }
    let was = ctx.var("general_log_file");
    ctx.root()
        .query_drop(format!(
            "SET GLOBAL general_log_file = '{}'",
            mnt.join("general.log").display()
        ))
        .unwrap();
    let originals = ctx.originals();
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (peak, stop, mnt) = (peak.clone(), stop.clone(), mnt.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if let Some(pm) = super::used_per_mille(&mnt) {
                    peak.fetch_max(pm, std::sync::atomic::Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let out = ctx.work.join("capture-small.log");
    let (child, _said, rest) = start_capture(ctx, &out, "60s");
    // A busy application: 4 KB statements, about a thousand a second (some 4 MB of log a
    // second: more than the 10% of this filesystem kept free between two of the old
    // guard's readings, half a second apart).
    let load = {
        let stop = stop.clone();
        let socket = ctx.socket.clone();
        std::thread::spawn(move || {
            let mut c = common::root(&socket);
            let filler = "x".repeat(4000);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if c.query_drop(format!("SELECT '{filler}'")).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_micros(900));
            }
        })
    };
    let o = wait_child(child, Duration::from_secs(90));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    watcher.join().unwrap();
    load.join().unwrap();
    let words = format!("{}{}", text(&o), rest.join().unwrap());
    let peak = peak.load(std::sync::atomic::Ordering::Relaxed) as f64 / 10.0;
    let restored = ctx.as_found(&originals);
    ctx.root()
        .query_drop(format!("SET GLOBAL general_log_file = '{was}'"))
        .unwrap();
    let _ = Command::new("umount").arg(&mnt).status();
    assert_eq!(o.status.code(), Some(0), "{words}");
    assert!(words.contains("Ended early"), "{words}");
    assert!(words.contains("10% free"), "{words}");
    assert!(
        peak < 90.0,
        "the filesystem reached {peak:.1}% used: {words}"
    );
    restored.unwrap();
    println!("capture disk guard: stopped at {peak:.1}% of an 8 MB filesystem, settings as found");
}

/// Issue 50: a DBA changes what the capture switched while it runs: the restore leaves the
/// DBA's value, and the words say what was left and why (they used to claim it was put
/// back). A capture that logged nothing says so and fails.
pub fn a_dbas_change_during_a_capture_is_said_as_left(ctx: &Ctx) {
    let out = ctx.work.join("capture-dba.log");
    let (child, _said, rest) = start_capture(ctx, &out, "3s");
    marked(ctx, "captured-with-a-dba");
    ctx.root()
        .query_drop("SET GLOBAL log_output = 'FILE,TABLE'")
        .unwrap();
    let o = wait_child(child, Duration::from_secs(60));
    let words = format!("{}{}", text(&o), rest.join().unwrap());
    let now = ctx.var("log_output");
    ctx.root()
        .query_drop("SET GLOBAL log_output = 'TABLE'")
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{words}");
    assert_eq!(now, "FILE,TABLE", "the DBA's value is kept: {words}");
    assert!(words.contains("left log_output = FILE,TABLE"), "{words}");
    assert!(!words.contains("log_output=TABLE"), "{words}");
    // Nothing ran while it was on: exit 1, saying why, the setting back.
    let originals = ctx.originals();
    let idle = ctx.work.join("capture-idle.log");
    let o = ctx.run(&[
        "capture".into(),
        "--for".into(),
        "1s".into(),
        "--target".into(),
        ctx.socket_url("f_idle"),
        "--out".into(),
        idle.display().to_string(),
    ]);
    let held = std::fs::read_to_string(&idle).unwrap_or_default();
    assert_eq!(o.status.code(), Some(1), "{}\ncaptured:\n{held}", text(&o));
    assert!(text(&o).contains("holds no statement"), "{}", text(&o));
    ctx.as_found(&originals).unwrap();
    println!("a DBA's change during a capture: kept and said; an empty capture fails in words");
}
