//! `dbtax run` and `dbtax features` against the real server: the dry run, a measured run
//! that restores every setting, the audit plugin, multi-factor files.

use super::*;

pub(crate) fn dry_run_prints_statements_and_changes_nothing(ctx: &Ctx) {
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

/// More clients than the server has connections for: the dry run shows the plan and says
/// the run would be refused (issue 37: it refused the dry run too); the run itself is bad
/// input that changes nothing.
pub(crate) fn too_many_threads_for_the_server_are_said_by_the_dry_run(ctx: &Ctx) {
    let max: u64 = ctx.var("max_connections").parse().unwrap();
    let threads = (max + 50).min(4096).to_string();
    let args = |dry: bool| {
        let mut a = vec![
            "run".to_string(),
            "--target".into(),
            ctx.url("t_conns"),
            "--feature".into(),
            "general-log".into(),
            "--threads".into(),
            threads.clone(),
        ];
        if dry {
            a.push("--dry-run".into());
        }
        a
    };
    let dry: Vec<String> = args(true);
    let o = ctx.run(&dry.iter().map(String::as_str).collect::<Vec<_>>());
    ok(&o);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("SET GLOBAL general_log = ON"), "{stdout}");
    assert!(
        stdout.contains("refused    a run as planned would stop here")
            && stdout.contains("raise max_connections"),
        "{stdout}"
    );
    let run: Vec<String> = args(false);
    let o = ctx.run(&run.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("raise max_connections"), "{stderr}");
    assert_eq!(ctx.var("general_log"), "0");
    assert_eq!(
        ctx.count("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 't_conns'"),
        0,
        "nothing was created"
    );
}

pub(crate) fn run_measures_and_restores_every_setting(ctx: &Ctx) {
    ctx.set("long_query_time", "7");
    let out = ctx.out_dir("run");
    // Three blocks: the fewest that give an interval.
    // With its warm-up round, whose trials are not counted.
    let mut args = ctx.run_args("t_run", &["general-log", "slow-log"], "1,3", "3", &out);
    args.retain(|a| a != common::NO_WARMUP_ROUND);
    let o = ctx.run(&args);
    ok(&o);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("threads 3") && stdout.contains("general-log"),
        "{stdout}"
    );
    // Without a terminal, progress is one plain line per block: 3 rounds × 2 thread counts,
    // after a warm-up round of 6 trials that are not counted, and one more per block set
    // aside as disturbed (a busy machine: it is run again) while the run allows (as many
    // more rounds as were planned).
    let stderr = String::from_utf8_lossy(&o.stderr);
    let v = validate_results(&out.join("results.json"));
    // (Counted from the words: a run said busy throughout keeps its set-aside blocks.)
    let disturbed = stderr
        .lines()
        .filter(|l| l.contains(" set aside: "))
        .count();
    let runs = common::block_runs_from_words(&stderr, &[1, 3], 3);
    assert!((6..=6 + disturbed).contains(&runs), "{stderr}");
    let blocks: Vec<&str> = stderr.lines().filter(|l| l.contains(" trials] ")).collect();
    assert_eq!(blocks.len(), runs, "{stderr}");
    let trials = 6 + 3 * runs;
    assert!(
        blocks[blocks.len() - 1].starts_with(&format!("[{trials}/{trials} trials]")),
        "{stderr}"
    );
    assert!(stderr.contains("warm-up round"), "{stderr}");
    assert_eq!(v["complete"], true);
    assert_eq!(v["cells"].as_array().unwrap().len(), 6);
    assert!(v["seed"].as_u64().is_some(), "the seed replays the order");
    // Every trial says where it ran: its block, its place in it, when, and after what.
    for c in v["cells"].as_array().unwrap() {
        let blocks: Vec<u64> = c["trials"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["block"].as_u64().unwrap())
            .collect();
        // Three blocks in order, or (blocks set aside and run again) later ones too, or
        // fewer where the re-runs ran out (the figures below then say there is no interval).
        assert!(
            !blocks.is_empty() && blocks.windows(2).all(|w| w[0] < w[1]),
            "{c}"
        );
        if disturbed == 0 {
            assert_eq!(blocks, [0, 1, 2], "{c}");
        }
        for t in c["trials"].as_array().unwrap() {
            assert!(t["position"].as_u64().unwrap() < 3, "{t}");
            assert!(t["started_at"].as_str().unwrap().ends_with('Z'), "{t}");
            assert!(
                t["after"].is_string(),
                "the warm-up ran before every trial: {t}"
            );
        }
    }
    for t in [1, 3] {
        let off = cell(&v, "off", t);
        assert!(off["overhead"].is_null());
        assert!(
            off["log_bytes_per_query_median"].as_f64().unwrap() < 1.0,
            "{off}"
        );
        for feature in ["general-log", "slow-log"] {
            let c = cell(&v, feature, t);
            // An interval from three kept blocks or more, or the words why there is none
            // (the re-runs ran out with a point short of its blocks).
            if c["trials"].as_array().unwrap().len() >= 3 {
                assert!(c["overhead"]["ci95_pct"].is_array(), "{c}");
            } else {
                assert!(c["no_interval"].is_string(), "{c}");
                assert!(stdout.contains("no interval"), "{stdout}");
            }
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

pub(crate) fn audit_plugin_is_loaded_only_in_its_variants_and_removed_after(ctx: &Ctx) {
    let plugin_statements = || {
        let mut conn = ctx.root();
        let mut n = |name: &str| -> u64 {
            let row: Option<(String, u64)> = conn
                .query_first(format!("SHOW GLOBAL STATUS LIKE '{name}'"))
                .unwrap();
            row.map(|r| r.1).unwrap_or(0)
        };
        (n("Com_install_plugin"), n("Com_uninstall_plugin"))
    };
    let before = plugin_statements();
    let out = ctx.out_dir("audit");
    // With its warm-up round: three rounds of switches.
    let mut args = ctx.run_args("t_audit", &["audit-idle", "audit"], "2", "2", &out);
    args.retain(|a| a != common::NO_WARMUP_ROUND);
    let o = ctx.run(&args);
    ok(&o);
    let after = plugin_statements();
    let v = validate_results(&out.join("results.json"));
    let plugins = |name: &str| {
        let info = v["variants"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == name)
            .unwrap();
        info["plugins"].clone()
    };
    assert!(plugins("off").is_null(), "the baseline runs without it");
    assert_eq!(plugins("audit"), serde_json::json!(["server_audit"]));
    assert_eq!(plugins("audit-idle"), serde_json::json!(["server_audit"]));
    let log = |name: &str| {
        cell(&v, name, 2)["log_bytes_per_query_median"]
            .as_f64()
            .unwrap()
    };
    assert!(log("audit") > 20.0, "{}", log("audit"));
    assert_eq!(
        log("audit-idle"),
        0.0,
        "loaded with logging off writes nothing"
    );
    // Loaded and removed at the switches, not once for the run: 3 rounds (the warm-up round
    // and 2 blocks) each with the baseline between plugin variants give at least 2 loads
    // (the two plugin variants may follow each other, across a round's end too).
    let (installs, uninstalls) = (after.0 - before.0, after.1 - before.1);
    assert!(installs >= 2, "{installs} INSTALL statements");
    // (The restore's UNINSTALL counts too when the plugin was already out.)
    assert!(
        uninstalls >= installs,
        "every load was undone: {installs} / {uninstalls}"
    );
    assert_eq!(
        ctx.count(
            "SELECT COUNT(*) FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'SERVER_AUDIT'"
        ),
        0,
        "dbtax installed the plugin, so it must remove it"
    );
}

pub(crate) fn features_reports_support_on_the_target(ctx: &Ctx) {
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

pub(crate) fn factors_in_a_file_report_each_factor_within_the_other(ctx: &Ctx) {
    let file = ctx.file(
        "factors.toml",
        r#"
name = "log-x-flush"
workload = { kind = "read-write", tables = 1, table_size = 2000 }
threads = [2]
trial = "0.5s"
warmup = "0.1s"
repeats = 3
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
    // The interaction: how many points the general log's cost changes with f2 against f1,
    // with its interval, in results.json, the words and the HTML report.
    let i = &v["interactions"][0];
    assert_eq!(i["factors"], serde_json::json!(["log", "flush"]), "{i}");
    assert_eq!(i["levels"], serde_json::json!(["glog", "f2"]), "{i}");
    assert_eq!(i["against"], "f1");
    let (lo, hi) = (
        i["ci95_pct"][0].as_f64().unwrap(),
        i["ci95_pct"][1].as_f64().unwrap(),
    );
    assert!(
        lo <= i["pct"].as_f64().unwrap() && i["pct"].as_f64().unwrap() <= hi,
        "{i}"
    );
    let words = String::from_utf8_lossy(&o.stdout).to_lowercase();
    assert!(
        words.contains("interaction: glog with f2 instead of f1"),
        "{words}"
    );
    assert!(
        words.contains("no interaction measured between")
            || words.contains(" points more with")
            || words.contains(" points less with"),
        "{words}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("<h3>Interactions</h3>"),
        "the HTML report's table"
    );
    assert_eq!(ctx.var("innodb_flush_log_at_trx_commit"), "1", "restored");
    assert_eq!(ctx.var("general_log"), "0", "restored");
}

pub(crate) fn a_query_the_server_refuses_is_bad_input_and_changes_nothing(ctx: &Ctx) {
    let out = ctx.out_dir("badquery");
    let mut args = ctx.run_args("t_badq", &["general-log"], "1", "2", &out);
    args.extend(["--query".to_string(), "selec 1 from dual".to_string()]);
    let o = ctx.run(&args);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("selec 1 from dual"), "{stderr}");
    assert!(stderr.contains("Nothing was changed"), "{stderr}");
    assert_eq!(ctx.var("general_log"), "0");
    assert_eq!(ctx.journals(), 0);
    assert_eq!(
        ctx.count("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 't_badq'"),
        0,
        "refused before the schema was created"
    );
}

pub(crate) fn a_failing_setup_is_bad_input_and_changes_nothing(ctx: &Ctx) {
    let out = ctx.out_dir("badsetup");
    let mut args = ctx.run_args("t_badsetup", &["general-log"], "1", "2", &out);
    args.extend(
        [
            "--query",
            "select * from t_missing",
            "--setup",
            "create tabel t_missing (id int)",
        ]
        .map(String::from),
    );
    let o = ctx.run(&args);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("setup statement failed"), "{stderr}");
    assert_eq!(stderr.matches("Error:").count(), 1, "one message: {stderr}");
    assert!(!stderr.contains("restor"), "nothing to restore: {stderr}");
    assert_eq!(ctx.var("general_log"), "0");
    assert_eq!(ctx.journals(), 0);
}

pub(crate) fn compare_target_interleaves_two_servers_block_by_block(ctx: &Ctx) {
    let out = ctx.out_dir("compare");
    let mut args = ctx.run_args("t_compare", &["general-log"], "2", "2", &out);
    args.extend(["--compare-target".into(), "managed:mariadb".into()]);
    let o = ctx.run(&args);
    ok(&o);
    let a = validate_results(&out.join("results.json"));
    let b = validate_results(&out.join("compare-target/results.json"));
    assert_eq!(a["paired_with"], b["target"]["url"]);
    assert_eq!(b["paired_with"], a["target"]["url"]);
    // Every block ran on both servers, and their trials alternate in time: neither server
    // ran all of its trials first.
    let trials = |v: &serde_json::Value| -> Vec<(u64, String)> {
        v["cells"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["trials"].as_array().unwrap().clone())
            .map(|t| {
                (
                    t["block"].as_u64().unwrap(),
                    t["started_at"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let (ta, tb) = (trials(&a), trials(&b));
    // The blocks each server kept: the same on both (a block disturbed on either is set
    // aside on both, and run again), two trials in each (off and general-log), and two
    // blocks at least unless the words say why there is no interval.
    let kept = |ts: &[(u64, String)]| {
        let mut b: Vec<u64> = ts.iter().map(|t| t.0).collect();
        b.sort();
        b.dedup();
        b
    };
    assert_eq!(kept(&ta), kept(&tb), "{ta:?} {tb:?}");
    for block in kept(&ta) {
        assert_eq!(ta.iter().filter(|t| t.0 == block).count(), 2, "{ta:?}");
        assert_eq!(tb.iter().filter(|t| t.0 == block).count(), 2, "{tb:?}");
    }
    assert!(!kept(&ta).is_empty(), "{ta:?}");
    let first = |ts: &[(u64, String)]| ts.iter().map(|t| t.1.clone()).min().unwrap();
    let last = |ts: &[(u64, String)]| ts.iter().map(|t| t.1.clone()).max().unwrap();
    assert!(first(&tb) < last(&ta) && first(&ta) < last(&tb));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("B/A [95% CI]"), "{stdout}");
    assert!(
        stdout.contains("ran interleaved, block by block"),
        "{stdout}"
    );
    assert!(out.join("compare.html").exists());
    assert_eq!(ctx.var("general_log"), "0", "A's setting restored");
}

pub(crate) fn compare_target_refuses_the_same_server_twice(ctx: &Ctx) {
    let out = ctx.out_dir("compare-same");
    let mut args = ctx.run_args("t_compare", &["general-log"], "2", "2", &out);
    args.extend(["--compare-target".into(), ctx.url("t_compare")]);
    let o = ctx.run(&args);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("names the same server"),
        "{}",
        text(&o)
    );
}

pub(crate) fn a_run_at_half_of_capacity_reports_added_latency_and_restores(ctx: &Ctx) {
    let out = ctx.out_dir("rate");
    let o = ctx.run(&[
        "run",
        "--target",
        &ctx.url("t_rate_run"),
        "--feature",
        "slow-log",
        "--at-rate",
        "50%",
        "--production-cores",
        "64",
        "--threads",
        "2",
        "--repeats",
        "3",
        "--trial",
        "1s",
        "--warmup",
        "0.2s",
        "--table-size",
        "2000",
        "--no-warmup-round",
        "--out",
        out.to_str().unwrap(),
    ]);
    ok(&o);
    let v = validate_results(&out.join("results.json"));
    let rate = &v["rate"];
    assert_eq!(rate["levels"], serde_json::json!(["50%"]), "{rate}");
    assert_eq!(rate["arrival"], "poisson");
    let capacity = rate["calibration"][0]["capacity_tps"].as_f64().unwrap();
    assert_eq!(rate["calibration"][0]["threads"], 2);
    assert!(capacity > 0.0);
    for variant in ["off", "slow-log"] {
        let c = cell(&v, variant, 2);
        let asked = c["rate"]["asked"].as_f64().unwrap();
        assert!(
            (asked / (capacity / 2.0) - 1.0).abs() < 1e-6,
            "asked is half of the calibrated capacity: {asked} of {capacity}"
        );
        // At a fixed rate there is no throughput overhead: the cost is latency and CPU.
        assert!(c["overhead"].is_null(), "{c}");
        for t in c["trials"].as_array().unwrap() {
            assert_eq!(t["rate"]["asked"].as_f64().unwrap(), asked);
            assert!(t["service_latency_ms"]["p50"].as_f64().unwrap() > 0.0);
            assert!(t["schedule_lag_ms"]["max"].is_number());
        }
    }
    let slow = cell(&v, "slow-log", 2);
    for p in ["p50", "p99"] {
        let d = &slow["latency_delta_ms"][p];
        let (lo, hi) = (
            d["ci95"][0].as_f64().unwrap(),
            d["ci95"][1].as_f64().unwrap(),
        );
        let value = d["value"].as_f64().unwrap();
        assert!(lo <= value && value <= hi, "{d}");
    }
    assert!(cell(&v, "off", 2)["latency_delta_ms"].is_null());
    assert!(slow["log_bytes_per_query_median"].as_f64().unwrap() > 20.0);
    // The answer says what the slow log adds, at what load, in words and in the files.
    // ("At 50% of capacity … the server does not keep up" when the machine stalled the
    // baseline: the words lead with the load then.)
    let stdout = text(&o);
    assert!(
        stdout.to_lowercase().contains("at 50% of capacity"),
        "{stdout}"
    );
    // The bill at that rate: the log a day and the latency added, with intervals, and a
    // lower bound for the 64 cores of production.
    let bill = v["bill"].as_array().unwrap();
    assert_eq!(bill.len(), 1, "{bill:?}");
    let b = &bill[0];
    assert_eq!(b["variant"], "slow-log");
    assert_eq!(b["level"], "50%");
    let log = &b["log_bytes_per_day"];
    let (lo, hi) = (
        log["ci95"][0].as_f64().unwrap(),
        log["ci95"][1].as_f64().unwrap(),
    );
    let per_query = slow["log_bytes_per_query_median"].as_f64().unwrap();
    let rate = b["rate"].as_f64().unwrap();
    // The day's log is the bytes per query at the rate run, within its interval's reach.
    let day = per_query * rate * 86_400.0;
    assert!(lo > 0.0 && lo <= hi, "{b}");
    assert!(day > 0.5 * lo && day < 2.0 * hi, "{day} against {log}");
    assert!(b["latency_delta_ms"]["p99"]["ci95"].is_array(), "{b}");
    assert!(
        b["lower_bound"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("production has 64 cores")),
        "{b}"
    );
    assert!(stdout.contains("of log a day"), "{stdout}");
    assert!(stdout.contains("lower bound"), "{stdout}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("The bill at each rate"), "the bill's table");
    assert!(html.contains("chart-added_latency_p99"), "rate charts");
    assert!(html.contains("chart-server_utilisation"));
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    assert!(csv.lines().next().unwrap().contains("schedule_lag_p99_ms"));
    assert_eq!(ctx.var("slow_query_log"), "0");
    assert_eq!(ctx.journals(), 0);
}
