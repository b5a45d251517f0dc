//! `dbtax live` while sysbench plays production (its own process, at a rate): on a MariaDB
//! with performance_schema on, the general log's cost per statement found from the server's
//! own counters, the latency added from its digests, the errors counted, what watching cost
//! read from dbtax's own server thread, every setting put back; a guard that trips (sessions
//! running, statement time) switches the feature off and ends the run with exit 1; bad input
//! changes nothing.

use super::*;

/// sysbench's point selects on `db` as production: `rate` events/s (0: as fast as it goes),
/// until killed.
fn production(ctx: &Ctx, db: &str, rate: u32) -> std::process::Child {
    ctx.root()
        .query_drop(format!("CREATE DATABASE IF NOT EXISTS {db}"))
        .unwrap();
    let base = |cmd: &mut Command| {
        cmd.args([
            "oltp_point_select",
            "--db-driver=mysql",
            "--mysql-user=root",
        ])
        .arg(format!("--mysql-db={db}"))
        .arg(format!("--mysql-socket={}", ctx.socket.display()))
        .args(["--tables=1", "--table-size=2000"])
        // As text, as many applications send their statements: MariaDB leaves statements
        // executed through the binary protocol out of performance_schema's digests.
        .arg("--db-ps-mode=disable");
    };
    if ctx.count(&format!(
        "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = '{db}'"
    )) == 0
    {
        let mut prep = Command::new("sysbench");
        base(&mut prep);
        ok(&prep.arg("prepare").output().expect("sysbench"));
    }
    let mut run = Command::new("sysbench");
    base(&mut run);
    run.args(["--threads=4", "--time=600", "--report-interval=0"])
        .arg(format!("--rate={rate}"))
        .arg("run")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("sysbench")
}

/// Stop production by its pid.
fn stop_production(mut p: std::process::Child) {
    let _ = p.kill();
    let _ = p.wait();
}

/// A MariaDB of the test's own with performance_schema on (the suite's has it off, as
/// MariaDB ships), dbtax's state and results where the suite's go.
fn with_performance_schema(ctx: &Ctx) -> Ctx {
    let port = common::free_port();
    let server = ManagedServer::start(&ManagedConfig {
        port: Some(port),
        server_opts: vec!["performance_schema=ON".into()],
        ..Default::default()
    })
    .expect("starting a MariaDB with performance_schema");
    Ctx {
        socket: server.socket(),
        _server: server,
        port,
        state_dir: ctx.state_dir.clone(),
        work: ctx.work.clone(),
    }
}

/// A client whose every statement fails (a table that does not exist), about 100 a second,
/// until `stop`.
fn failing_client(
    ctx: &Ctx,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    let mut c = ctx.root();
    std::thread::spawn(move || {
        let mut n = 0;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            if c.query_drop("SELECT * FROM mysql.no_such_table").is_err() {
                n += 1;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        n
    })
}

fn live_args(ctx: &Ctx, out: &str, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "live",
        "--target",
        &ctx.url(""),
        "--feature",
        "general-log",
        "--window",
        "4s",
        "--settle",
        "0.5s",
        "--yes",
        "--seed",
        "3",
        "--out",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.push(ctx.out_dir(out).display().to_string());
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

pub(crate) fn live_finds_the_general_logs_cost_on_production_traffic(suite: &Ctx) {
    let ctx = &with_performance_schema(suite);
    let before = ctx.var("general_log");
    let prod = production(ctx, "t_live", 1500);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let failing = failing_client(ctx, stop.clone());
    // The dry run: the schedule, the signals, the guards; nothing changed.
    let o = ctx.run(&live_args(ctx, "live-dry", &["--for", "32s", "--dry-run"]));
    ok(&o);
    let said = text(&o);
    assert!(said.contains("8 windows of 4 s"), "{said}");
    assert!(said.contains("guards: sessions running"), "{said}");
    assert!(
        said.contains("statement times per shape: performance_schema"),
        "{said}"
    );
    assert!(said.contains("statement time above 2x"), "{said}");
    assert!(said.contains("an error rate above"), "{said}");
    let o = ctx.run(&live_args(ctx, "live", &["--for", "32s"]));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let failed = failing.join().unwrap();
    stop_production(prod);
    ok(&o);
    assert_eq!(ctx.var("general_log"), before, "the general log as found");
    assert_eq!(ctx.journals(), 0, "no journal left");
    let r = validate_results(&ctx.out_dir("live").join("results.json"));
    let live = &r["live"];
    let windows = live["windows"].as_array().unwrap();
    assert_eq!(windows.len(), 8);
    let e = &live["estimates"][0];
    assert!(e["pairs"].as_u64().unwrap() >= 3, "{e}");
    // Production's rate, as the server counted it (sysbench's 1,500 events/s, one statement
    // each, and the failing client's, less whatever the machine could not keep up with).
    let rate = e["rate"].as_f64().unwrap();
    assert!((500.0..2_200.0).contains(&rate), "{rate}");
    // The general log writes each statement's text: tens of bytes per statement at least,
    // and nothing in the off windows.
    let log = e["log_bytes_per_statement"]["value"].as_f64().unwrap();
    assert!((20.0..1_000.0).contains(&log), "{log}");
    let cpu = &e["cpu_us_per_statement"];
    assert!(cpu["ci95"][1].as_f64().unwrap() > 0.0, "{cpu}");
    // The digests: sysbench's point select and the failing statement at least, every
    // window's calls read, and a latency interval that holds the point estimate.
    assert_eq!(live["shapes_read"], true, "{live}");
    assert!(live["shapes"].as_u64().unwrap() >= 2, "{}", live["shapes"]);
    let share = live["shapes_share"].as_f64().unwrap();
    assert!((0.5..=1.05).contains(&share), "{share}");
    for w in windows {
        let calls: f64 = w["shapes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_f64().unwrap())
            .sum();
        let statements = w["statements"].as_f64().unwrap();
        // The compared shapes are nearly all of the statements (the others: the server's
        // own, and a connection's first statements).
        assert!(
            calls > 0.5 * statements && calls <= 1.05 * statements + 20.0,
            "{calls} calls of {statements} statements: {w}"
        );
    }
    let lat = &e["latency_us"];
    assert!(
        lat["ci95"][0].as_f64().unwrap() <= lat["value"].as_f64().unwrap(),
        "{lat}"
    );
    // The failing client's errors, counted in the windows (each a few seconds of its 100 a
    // second; none of production's statements fails).
    let errors: f64 = windows.iter().map(|w| w["errors"].as_f64().unwrap()).sum();
    assert!(
        errors >= 50.0 && errors <= failed as f64,
        "{errors} of {failed}"
    );
    // What watching cost, from dbtax's own thread in the server: well under a millisecond
    // a read.
    let us = live["poll_server_us"]
        .as_f64()
        .expect("read from its thread");
    assert!(us > 0.0 && us < 1_000.0, "{us}");
    let words = text(&o);
    assert!(words.contains("server CPU per statement added"), "{words}");
    assert!(words.contains("latency per statement added"), "{words}");
    assert!(words.contains("guards: none tripped"), "{words}");
    eprintln!(
        "live: general log at {rate:.0} statements/s: {:.2} µs [{:.2}, {:.2}] of server CPU, \
         latency {:.2} µs [{:.2}, {:.2}], {log:.0} B of log per statement; watching {us:.0} µs \
         of server CPU a read",
        cpu["value"].as_f64().unwrap(),
        cpu["ci95"][0].as_f64().unwrap(),
        cpu["ci95"][1].as_f64().unwrap(),
        lat["value"].as_f64().unwrap(),
        lat["ci95"][0].as_f64().unwrap(),
        lat["ci95"][1].as_f64().unwrap(),
    );
}

/// The latency guard, set so low that the statements' own time trips it: the feature is
/// switched off at the first read of the digests in an on window after an off one.
pub(crate) fn a_live_latency_guard_switches_the_feature_off(suite: &Ctx) {
    let ctx = &with_performance_schema(suite);
    let before = ctx.var("general_log");
    let prod = production(ctx, "t_live", 1000);
    let o = ctx.run(&live_args(
        ctx,
        "live-latency",
        &["--for", "24s", "--latency-guard", "0.01", "--guard", "1000"],
    ));
    stop_production(prod);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let said = text(&o);
    assert!(said.contains("statements took"), "{said}");
    assert_eq!(ctx.var("general_log"), before, "the general log as found");
    assert_eq!(ctx.journals(), 0);
    let r = json_of_file(&ctx.out_dir("live-latency").join("results.json"));
    assert!(
        r["live"]["guard_tripped"]
            .as_str()
            .unwrap()
            .contains("statements took"),
        "{}",
        r["live"]
    );
}

pub(crate) fn a_live_guard_that_trips_switches_the_feature_off(ctx: &Ctx) {
    let before = ctx.var("general_log");
    // As fast as it goes: sessions are always running, above a guard of 0.01 x one.
    let prod = production(ctx, "t_live", 0);
    let o = ctx.run(&live_args(
        ctx,
        "live-guard",
        &["--for", "24s", "--guard", "0.01"],
    ));
    stop_production(prod);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let said = text(&o);
    assert!(said.contains("guard tripped"), "{said}");
    assert_eq!(ctx.var("general_log"), before, "the general log as found");
    assert_eq!(ctx.journals(), 0);
    let r = json_of_file(&ctx.out_dir("live-guard").join("results.json"));
    assert!(r["live"]["guard_tripped"].is_string(), "{}", r["live"]);
    assert_eq!(r["complete"], false);
}

/// kill -9 during an on window: the general log is left on, the journal says so, another
/// live run refuses to start over it, and `dbtax restore` puts the log back. The server's
/// wait_timeout is 2 s meanwhile: the switcher's connection, idle through the window that
/// reads the server as found (4 s), still switches the feature on.
pub(crate) fn a_killed_live_run_is_put_back_by_restore(ctx: &Ctx) {
    let before = ctx.var("general_log");
    assert_eq!(before, "0");
    let wait_timeout = ctx.var("wait_timeout");
    ctx.set("wait_timeout", "2");
    let prod = production(ctx, "t_live", 500);
    let mut child = ctx
        .dbtax()
        .args(live_args(ctx, "live-kill", &["--for", "60s"]))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(
        "the general log to be switched on",
        Duration::from_secs(40),
        || ctx.var("general_log") == "1",
    );
    child.kill().unwrap(); // SIGKILL: no chance to restore
    child.wait().unwrap();
    stop_production(prod);
    ctx.set("wait_timeout", &wait_timeout);
    assert_eq!(ctx.var("general_log"), "1", "left on by the killed run");
    assert_eq!(ctx.journals(), 1);
    let o = ctx.run(&live_args(ctx, "live-kill2", &["--for", "24s"]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("dbtax restore"), "{}", text(&o));
    let o = ctx.run(&["restore", "--target", &ctx.url("")]);
    ok(&o);
    assert_eq!(ctx.var("general_log"), before, "put back by restore");
    assert_eq!(ctx.journals(), 0);
}

pub(crate) fn live_refuses_bad_input_before_any_change(ctx: &Ctx) {
    let before = ctx.var("general_log");
    for (extra, words) in [
        (&["--for", "8s"][..], "at least 6 are needed"),
        (&["--for", "1m", "--max-on", "80%"][..], "--max-on"),
        (
            &["--for", "1m", "--feature", "no-such-thing"][..],
            "no-such-thing",
        ),
    ] {
        let o = ctx.run(&live_args(ctx, "live-bad", extra));
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", text(&o));
        assert!(text(&o).contains(words), "{extra:?}: {}", text(&o));
    }
    let o = ctx.run(&[
        "live",
        "--target",
        "managed:mariadb",
        "--feature",
        "general-log",
        "--for",
        "1m",
        "--yes",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    // Not on a terminal and no --yes: refused.
    let mut a = live_args(ctx, "live-bad", &["--for", "1m"]);
    a.retain(|x| x != "--yes");
    let o = ctx.run(&a);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--yes"), "{}", text(&o));
    assert_eq!(ctx.var("general_log"), before);
    assert_eq!(ctx.journals(), 0);
}

fn json_of_file(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}
