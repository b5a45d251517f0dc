//! Restart-only settings: refused where dbtax cannot restart, switched on a managed server.

use super::*;

pub(crate) fn a_restart_only_feature_is_refused_on_a_server_dbtax_does_not_manage(ctx: &Ctx) {
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

pub(crate) fn the_binary_log_is_switched_by_restarting_a_managed_server(ctx: &Ctx) {
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
    // Two blocks, or more where one was set aside as disturbed and run again.
    assert!(on.len() >= 2 && on.len() == off.len(), "{on:?} {off:?}");
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
