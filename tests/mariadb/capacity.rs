//! `--slo` on the real MariaDB: each variant's capacity at a latency objective, with the
//! general log switched only in its trials and put back.

use super::{Ctx, ok};
use crate::common::validate_results;

/// A statement of about half a millisecond of the server's CPU: the rates stay in the
/// hundreds, which dbtax's own clients (a debug build, beside a busy neighbour) hold easily.
const QUERY: &str = "SELECT BENCHMARK(1000, MD5('dbtax'))";

/// `dbtax run --slo p99=10ms` on the suite's server: a capacity per variant (with its
/// interval, or the words why not), the general log's change of it (an interval, or the
/// words), the words and the page's chart, and the setting as it was found. What the
/// capacities are depends on the machine: only what dbtax promises is asserted.
pub(crate) fn a_latency_objective_finds_each_variants_capacity_and_restores(ctx: &Ctx) {
    let before = ctx.var("general_log");
    let out = ctx.out_dir("slo");
    let o = ctx.run(&[
        "run",
        "--target",
        &ctx.url("t_slo"),
        "--feature",
        "general-log",
        "--slo",
        "p99=10ms",
        "--threads",
        "4",
        "--repeats",
        "3",
        "--trial",
        "0.6s",
        "--warmup",
        "0.2s",
        "--query",
        QUERY,
        "--out",
        out.to_str().unwrap(),
    ]);
    ok(&o);
    let words = String::from_utf8_lossy(&o.stdout);
    let v = validate_results(&out.join("results.json"));
    assert_eq!(v["complete"], true);
    let caps = v["capacity"].as_array().unwrap();
    assert_eq!(caps.len(), 2, "{v}");
    for c in caps {
        assert_eq!(c["slo"], "p99 ≤ 10 ms", "{c}");
        assert_eq!(c["threads"], 4);
        assert!(c["closed_loop"].as_f64().unwrap() > 0.0, "{c}");
        let steps = c["steps"].as_array().unwrap();
        assert!(steps.iter().any(|s| s["phase"] == "search"), "{c}");
        // Every trial ran at a rate and measured its latency from the intended start.
        for s in steps.iter().filter(|s| s["phase"] != "calibration") {
            assert!(s["rate"].as_f64().unwrap() > 0.0, "{s}");
            assert!(s["latency_ms"]["p99"].as_f64().unwrap() > 0.0, "{s}");
        }
        match c["rate"].as_f64() {
            Some(rate) => {
                assert!(rate > 0.0, "{c}");
                let measured = steps.iter().filter(|s| s["phase"] == "measured").count();
                assert_eq!(measured, 3 * c["blocks"].as_u64().unwrap() as usize, "{c}");
                if let Some(ci) = c["ci95"].as_array() {
                    let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
                    assert!(lo <= rate && rate <= hi, "{c}");
                } else {
                    assert!(c["note"].is_string(), "no interval and no words: {c}");
                }
            }
            None => assert!(c["note"].is_string(), "no capacity and no words: {c}"),
        }
    }
    let feature = caps.iter().find(|c| c["variant"] == "general-log").unwrap();
    if feature["cost_ci95_pct"].is_array() {
        assert!(words.contains("the rate served at p99 ≤ 10 ms"), "{words}");
    } else {
        assert!(
            words.contains("no interval for the change") || words.contains("no capacity at"),
            "{words}"
        );
    }
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(page.contains("class=\"objective\""), "the objective's line");
    assert!(out.join("charts/capacity.svg").exists());
    assert_eq!(ctx.var("general_log"), before);
    assert_eq!(ctx.journals(), 0);
}
