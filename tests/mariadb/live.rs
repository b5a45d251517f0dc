//! `dbtax live` on the suite's MariaDB while sysbench plays production (its own process, at a
//! rate): the general log's cost per statement found from the server's own counters, every
//! setting put back; a guard that trips switches the feature off and ends the run with exit
//! 1; bad input changes nothing.

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
        .args(["--tables=1", "--table-size=2000"]);
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
fn stop(mut p: std::process::Child) {
    let _ = p.kill();
    let _ = p.wait();
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

pub(crate) fn live_finds_the_general_logs_cost_on_production_traffic(ctx: &Ctx) {
    let before = ctx.var("general_log");
    let prod = production(ctx, "t_live", 1500);
    // The dry run: the schedule, the signals, the guards; nothing changed.
    let o = ctx.run(&live_args(ctx, "live-dry", &["--for", "32s", "--dry-run"]));
    ok(&o);
    let said = text(&o);
    assert!(said.contains("8 windows of 4 s"), "{said}");
    assert!(said.contains("guards: sessions running"), "{said}");
    assert!(said.contains("not read by this version"), "{said}");
    let o = ctx.run(&live_args(ctx, "live", &["--for", "32s"]));
    stop(prod);
    ok(&o);
    assert_eq!(ctx.var("general_log"), before, "the general log as found");
    assert_eq!(ctx.journals(), 0, "no journal left");
    let r = validate_results(&ctx.out_dir("live").join("results.json"));
    let live = &r["live"];
    assert_eq!(live["windows"].as_array().unwrap().len(), 8);
    let e = &live["estimates"][0];
    assert!(e["pairs"].as_u64().unwrap() >= 3, "{e}");
    // Production's rate, as the server counted it (sysbench's 1,500 events/s, one statement
    // each, less whatever the machine could not keep up with).
    let rate = e["rate"].as_f64().unwrap();
    assert!((500.0..2_000.0).contains(&rate), "{rate}");
    // The general log writes each statement's text: tens of bytes per statement at least,
    // and nothing in the off windows.
    let log = e["log_bytes_per_statement"]["value"].as_f64().unwrap();
    assert!((20.0..1_000.0).contains(&log), "{log}");
    let cpu = &e["cpu_us_per_statement"];
    assert!(cpu["ci95"][1].as_f64().unwrap() > 0.0, "{cpu}");
    let words = text(&o);
    assert!(words.contains("server CPU per statement added"), "{words}");
    assert!(words.contains("guards: none tripped"), "{words}");
    eprintln!(
        "live: general log at {rate:.0} statements/s: {:.2} µs [{:.2}, {:.2}] of server CPU \
         and {log:.0} B of log per statement",
        cpu["value"].as_f64().unwrap(),
        cpu["ci95"][0].as_f64().unwrap(),
        cpu["ci95"][1].as_f64().unwrap()
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
    stop(prod);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let said = text(&o);
    assert!(said.contains("guard tripped"), "{said}");
    assert_eq!(ctx.var("general_log"), before, "the general log as found");
    assert_eq!(ctx.journals(), 0);
    let r = json_of_file(&ctx.out_dir("live-guard").join("results.json"));
    assert!(r["live"]["guard_tripped"].is_string(), "{}", r["live"]);
    assert_eq!(r["complete"], false);
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
