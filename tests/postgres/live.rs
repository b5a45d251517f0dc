//! `dbtax live` on a PostgreSQL with pg_stat_statements while pgbench plays production (its
//! own process, select-only at a rate): log_statement switched in windows, its cost per
//! transaction found from the server's own counters, the latency added from
//! pg_stat_statements, what watching cost read from dbtax's own backend,
//! postgresql.auto.conf put back byte for byte.

use super::*;

pub(crate) fn live_finds_log_statements_cost_on_production_traffic(suite: &Ctx) {
    let server = PgManaged::start(&ManagedConfig {
        port: Some(common::free_port()),
        server_opts: vec!["shared_preload_libraries=pg_stat_statements".into()],
        ..Default::default()
    })
    .expect("starting a PostgreSQL with pg_stat_statements");
    let ctx = &Ctx {
        server,
        state_dir: suite.state_dir.clone(),
        work: suite.work.clone(),
    };
    let mut admin = ctx.sql("postgres");
    admin.batch_execute("CREATE DATABASE plive").unwrap();
    admin
        .batch_execute("CREATE EXTENSION pg_stat_statements")
        .unwrap();
    let conn = |cmd: &mut Command| {
        cmd.arg("-h").arg(ctx.server.socket_dir()).args([
            "-p",
            &ctx.server.port().to_string(),
            "-U",
            "postgres",
        ]);
    };
    let mut init = Command::new(pgbench());
    conn(&mut init);
    ok(&init
        .args(["-i", "-s", "1", "-q", "plive"])
        .output()
        .unwrap());
    let conf = ctx.auto_conf();
    let mut prod = Command::new(pgbench());
    conn(&mut prod);
    let mut prod = prod
        .args([
            "-S", "-c", "4", "-j", "2", "-R", "800", "-T", "600", "plive",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let o = ctx.run(&[
        "live",
        "--target",
        &ctx.url("postgres"),
        "--feature",
        "log-statement",
        "--for",
        "32s",
        "--window",
        "4s",
        "--settle",
        "0.5s",
        "--seed",
        "5",
        "--yes",
        "--out",
        &ctx.work.join("live").display().to_string(),
    ]);
    let _ = prod.kill();
    let _ = prod.wait();
    ok(&o);
    assert_eq!(ctx.show("log_statement"), "none");
    assert_eq!(
        ctx.auto_conf(),
        conf,
        "postgresql.auto.conf as found, byte for byte"
    );
    assert_eq!(ctx.journals(), 0);
    let r = validate_results(&ctx.work.join("live").join("results.json"));
    let live = &r["live"];
    assert_eq!(live["work"], "transactions");
    assert_eq!(live["windows"].as_array().unwrap().len(), 8);
    let e = &live["estimates"][0];
    assert!(e["pairs"].as_u64().unwrap() >= 3, "{e}");
    let rate = e["rate"].as_f64().unwrap();
    assert!((200.0..1_100.0).contains(&rate), "{rate}");
    let cpu = &e["cpu_us_per_statement"];
    assert!(cpu["ci95"][1].as_f64().unwrap() > 0.0, "{cpu}");
    // pg_stat_statements: pgbench's select among the shapes compared, about one statement
    // in them per transaction (-S runs one select a transaction), a latency interval.
    assert_eq!(live["shapes_read"], true, "{live}");
    assert!(live["shapes"].as_u64().unwrap() >= 1, "{}", live["shapes"]);
    let share = live["shapes_share"].as_f64().unwrap();
    assert!((0.5..=1.5).contains(&share), "{share}");
    let lat = &e["latency_us"];
    assert!(
        lat["ci95"][0].as_f64().unwrap() <= lat["value"].as_f64().unwrap(),
        "{lat}"
    );
    assert!(live["windows"][0]["errors"].is_number(), "{live}");
    let us = live["poll_server_us"]
        .as_f64()
        .expect("read from its backend");
    assert!(us > 0.0 && us < 1_000.0, "{us}");
    assert!(
        text(&o).contains("held its lock in share mode"),
        "{}",
        text(&o)
    );
    eprintln!(
        "live: log_statement at {rate:.0} transactions/s: {:.1} µs [{:.1}, {:.1}] of server CPU \
         per transaction, latency {:.1} µs [{:.1}, {:.1}]; watching {us:.0} µs of server CPU a \
         read, a read of pg_stat_statements {:.2} ms",
        cpu["value"].as_f64().unwrap(),
        cpu["ci95"][0].as_f64().unwrap(),
        cpu["ci95"][1].as_f64().unwrap(),
        lat["value"].as_f64().unwrap(),
        lat["ci95"][0].as_f64().unwrap(),
        lat["ci95"][1].as_f64().unwrap(),
        live["shape_read_ms"].as_f64().unwrap()
    );
}
