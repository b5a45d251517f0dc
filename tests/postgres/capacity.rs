//! `--slo` on the real PostgreSQL: each variant's capacity at a latency objective, with the
//! statement log switched only in its trials and postgresql.auto.conf put back byte for byte.

use super::{Ctx, ok};
use crate::common::validate_results;

/// A statement of about a millisecond of the server's CPU.
const QUERY: &str = "SELECT count(*) FROM generate_series(1, 5000)";

/// `dbtax run --slo p99=10ms` with log_statement: a capacity per variant (with its
/// interval, or the words why not), the change (an interval, or the words), the chart, and
/// the configuration as it was found.
pub(crate) fn a_latency_objective_finds_each_variants_capacity_and_restores(ctx: &Ctx) {
    let conf = ctx.auto_conf();
    let before = ctx.show("log_statement");
    let out = ctx.work.join("slo");
    let o = ctx.run(&crate::common::slo_args(&ctx.url("postgres"), QUERY, &out));
    ok(&o);
    let words = String::from_utf8_lossy(&o.stdout);
    let v = validate_results(&out.join("results.json"));
    assert_eq!(v["complete"], true);
    crate::common::capacities_as_promised(&v);
    assert!(
        words.contains("The statement log (log_statement = 'all')"),
        "{words}"
    );
    assert!(out.join("charts/capacity.svg").exists());
    assert_eq!(ctx.show("log_statement"), before);
    assert_eq!(ctx.auto_conf(), conf);
    assert_eq!(ctx.journals(), 0);
}
