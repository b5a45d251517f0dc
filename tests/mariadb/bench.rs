//! `dbtax bench` against the real server: one trial as JSON, TCP that stays TCP, exact
//! query counts, sysbench's tables reused, a managed server of its own.

use super::*;

pub(crate) fn bench_prints_one_trial_as_json_over_the_socket(ctx: &Ctx) {
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
    assert!(v["started_at"].as_str().unwrap().ends_with('Z'), "{v}");
    for p in ["p50", "p95", "p99", "max"] {
        assert!(v["latency_ms"][p].as_f64().unwrap() > 0.0, "{p}");
    }
    assert!(v["client_cpu_us_per_query"].as_f64().unwrap() > 0.0);
    // The server runs on this machine: its CPU per query is known.
    assert!(v["server_cpu_us_per_query"].as_f64().unwrap() > 0.0, "{v}");
    assert!(v.get("log_bytes_per_query").is_some());
}

pub(crate) fn tcp_means_tcp(ctx: &Ctx) {
    // Fails (subquery returns 2 rows) unless the session really came over TCP: its host has
    // a port ('127.0.0.1:51234', or 'localhost:51234' when the server resolves names), a
    // unix socket's is 'localhost'.
    let q = "SELECT IF((SELECT HOST FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()) \
             LIKE '%:%', 1, (SELECT 1 UNION SELECT 2))";
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

pub(crate) fn query_workload_stops_after_exactly_n_queries(ctx: &Ctx) {
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

pub(crate) fn sysbench_tables_are_reused_as_they_are(ctx: &Ctx) {
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

pub(crate) fn bench_on_a_managed_server_prints_one_trial(ctx: &Ctx) {
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

/// `dbtax bench --rate` at 1000 events/s for a 6 s measured window, as JSON.
fn bench_at_a_rate(ctx: &Ctx, arrival: &str) -> std::process::Child {
    ctx.dbtax()
        .args([
            "bench",
            "--target",
            &ctx.url("t_rate"),
            "--threads",
            "4",
            "--table-size",
            "2000",
            "--rate",
            "1000",
            "--arrival",
            arrival,
            "--duration",
            "6s",
            "--warmup",
            "1s",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn json_of_child(child: std::process::Child) -> serde_json::Value {
    let o = child.wait_with_output().unwrap();
    ok(&o);
    json_of(&o)
}

pub(crate) fn a_rate_is_held_and_latency_counts_from_the_intended_start(ctx: &Ctx) {
    // A quiet server: the schedule is kept. Uniform arrivals, so the count itself has no
    // Poisson noise and "within 2%" tests the scheduler, not chance.
    let quiet = json_of_child(bench_at_a_rate(ctx, "uniform"));
    let rate = &quiet["rate"];
    let achieved = rate["achieved"].as_f64().unwrap();
    assert_eq!(rate["asked"].as_f64().unwrap(), 1000.0, "{quiet}");
    assert!(
        (achieved / 1000.0 - 1.0).abs() < 0.02,
        "achieved {achieved}/s of 1000: {quiet}"
    );
    assert_eq!(rate["saturated"], false, "{quiet}");
    let p99 = quiet["latency_ms"]["p99"].as_f64().unwrap();
    assert!(p99 < 50.0, "a quiet server answers in a few ms: p99 {p99}");
    for k in ["p50", "p99", "max"] {
        assert!(quiet["schedule_lag_ms"][k].is_number(), "{quiet}");
    }
    assert!(quiet["service_latency_ms"]["p99"].as_f64().unwrap() <= p99 + 0.01);

    // The server stops answering for a second inside the measured window (SIGSTOP, then
    // SIGCONT): every event meant to start during the stall waits, and latency measured from
    // the intended start shows it. A tool that timed from the actual send (coordinated
    // omission) would report one slow query per worker and a p99 of a few ms.
    let pid = ctx._server.pid().expect("the test server's pid") as i32;
    let child = bench_at_a_rate(ctx, "poisson");
    std::thread::sleep(Duration::from_millis(3500));
    // SAFETY: kill(2) on the test's own server process, by its pid.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0);
    let stalled = json_of_child(child);
    let p99 = stalled["latency_ms"]["p99"].as_f64().unwrap();
    assert!(p99 >= 500.0, "a 1 s stall in 6 s: p99 {p99} ms: {stalled}");
    let lag_max = stalled["schedule_lag_ms"]["max"].as_f64().unwrap();
    assert!(lag_max >= 500.0, "sends waited behind the stall: {stalled}");
    let service_p99 = stalled["service_latency_ms"]["p99"].as_f64().unwrap();
    assert!(service_p99 < p99, "{stalled}");

    // Far past capacity: the rate is not achieved, the lag grows, the trial says saturated.
    let over = past_capacity(ctx, &[]);
    assert_eq!(over["rate"]["saturated"], true, "{over}");
    assert!(over["rate"]["achieved"].as_f64().unwrap() < 0.95 * 2_000_000.0);
    assert!(
        over["rate"]["lag_growth_ms"].as_f64().unwrap() > 100.0,
        "{over}"
    );
    // --skip-late: events later than the limit are skipped and counted, none is sent late.
    let skipping = past_capacity(ctx, &["--skip-late", "2ms"]);
    assert!(
        skipping["rate"]["skipped"].as_u64().unwrap() > 0,
        "{skipping}"
    );
    let lag_max = skipping["schedule_lag_ms"]["max"].as_f64().unwrap();
    assert!(lag_max <= 2.1, "no send later than the limit: {skipping}");
}

/// One second at 2,000,000 events/s over 2 threads, far past this server's capacity.
fn past_capacity(ctx: &Ctx, extra: &[&str]) -> serde_json::Value {
    let url = ctx.url("t_rate");
    let mut args = vec![
        "bench",
        "--target",
        &url,
        "--threads",
        "2",
        "--table-size",
        "2000",
        "--rate",
        "2000000",
        "--duration",
        "1s",
        "--warmup",
        "0s",
        "--json",
    ];
    args.extend_from_slice(extra);
    json_of(&ctx.run(&args))
}
