//! `--slo` on the real MariaDB: each variant's capacity at a latency objective, with the
//! general log switched only in its trials and put back.

use super::{Ctx, ok};
use crate::common::validate_results;

/// A statement of about half a millisecond of the server's CPU.
const QUERY: &str = "SELECT BENCHMARK(1000, MD5('dbtax'))";

/// `dbtax run --slo p99=10ms` on the suite's server: a capacity per variant (with its
/// interval, or the words why not), the general log's change of it (an interval, or the
/// words), the words and the page's chart, and the setting as it was found. What the
/// capacities are depends on the machine: only what dbtax promises is asserted.
pub(crate) fn a_latency_objective_finds_each_variants_capacity_and_restores(ctx: &Ctx) {
    let before = ctx.var("general_log");
    let out = ctx.out_dir("slo");
    let o = ctx.run(&crate::common::slo_args(&ctx.url("t_slo"), QUERY, &out));
    ok(&o);
    let words = String::from_utf8_lossy(&o.stdout);
    let v = validate_results(&out.join("results.json"));
    assert_eq!(v["complete"], true);
    let caps = crate::common::capacities_as_promised(&v);
    assert!(caps.iter().all(|c| c["threads"] == 4));
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
