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
    for p in ["p50", "p95", "p99", "max"] {
        assert!(v["latency_ms"][p].as_f64().unwrap() > 0.0, "{p}");
    }
    assert!(v["client_cpu_us_per_query"].as_f64().unwrap() > 0.0);
    // The server runs on this machine: its CPU per query is known.
    assert!(v["server_cpu_us_per_query"].as_f64().unwrap() > 0.0, "{v}");
    assert!(v.get("log_bytes_per_query").is_some());
}

pub(crate) fn tcp_means_tcp(ctx: &Ctx) {
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
