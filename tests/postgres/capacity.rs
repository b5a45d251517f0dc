//! `--slo` on the real PostgreSQL: each variant's capacity at a latency objective, with the
//! statement log switched only in its trials and postgresql.auto.conf put back byte for byte.

use super::{Ctx, ok};
use crate::common::validate_results;

/// A statement of about a millisecond of the server's CPU: the rates stay in the hundreds.
const QUERY: &str = "SELECT count(*) FROM generate_series(1, 5000)";

/// `dbtax run --slo p99=10ms` with log_statement: a capacity per variant (with its
/// interval, or the words why not), the change (an interval, or the words), the chart, and
/// the configuration as it was found.
pub(crate) fn a_latency_objective_finds_each_variants_capacity_and_restores(ctx: &Ctx) {
    let conf = ctx.auto_conf();
    let before = ctx.show("log_statement");
    let out = ctx.work.join("slo");
    let o = ctx.run(&[
        "run",
        "--target",
        &ctx.url("postgres"),
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
        let steps = c["steps"].as_array().unwrap();
        assert!(steps.iter().any(|s| s["phase"] == "search"), "{c}");
        match c["rate"].as_f64() {
            Some(rate) => match c["ci95"].as_array() {
                Some(ci) => {
                    let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
                    assert!(lo <= rate && rate <= hi, "{c}");
                }
                None => assert!(c["note"].is_string(), "no interval and no words: {c}"),
            },
            None => assert!(c["note"].is_string(), "no capacity and no words: {c}"),
        }
    }
    assert!(
        words.contains("The statement log (log_statement = 'all')"),
        "{words}"
    );
    assert!(out.join("charts/capacity.svg").exists());
    assert_eq!(ctx.show("log_statement"), before);
    assert_eq!(ctx.auto_conf(), conf);
    assert_eq!(ctx.journals(), 0);
}
