//! The terminal table: one section per thread count.

use super::interval::Interval;
use crate::results::{Cell, Results};

fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map(|x| format!("{x:.digits$}"))
        .unwrap_or_else(|| "-".into())
}

/// "12.3% [10.1, 14.4]", "… within noise", "baseline", or "too few blocks (2)".
pub fn overhead_text(r: &Results, c: &Cell) -> String {
    match &c.overhead {
        None if super::is_baseline(r, &c.variant) => "baseline".into(),
        None => too_few(c),
        Some(o) => Interval::overhead(o).to_string(),
    }
}

/// A non-baseline cell without an interval: "too few blocks (2)", or when its blocks
/// were set aside as disturbed "no interval: 4 of 5 blocks disturbed".
pub fn too_few(c: &Cell) -> String {
    if c.disturbed_trials.is_empty() {
        format!("too few blocks ({})", c.trials.len())
    } else {
        let n = c.disturbed_trials.len();
        format!(
            "no interval: {n} of {} blocks disturbed",
            n + c.trials.len()
        )
    }
}

/// Render the results as a plain-text table.
pub fn render(r: &Results) -> String {
    let mut s = format!(
        "\n{} — {} on {} ({}){}\n",
        r.name,
        r.workload
            .get("kind")
            .and_then(|k| k.as_str())
            .unwrap_or("?"),
        r.target.url,
        r.target.server_version,
        if r.complete { "" } else { " — INCOMPLETE" }
    );
    let width = r
        .variants
        .iter()
        .map(|v| v.name.len())
        .max()
        .unwrap_or(7)
        .max(7);
    if let Some(n) = r.queries_per_trial {
        s += &format!("\nEach trial ran {n} statements; 'time s' is its total time (median).\n");
    }
    let view = super::view::of(r);
    s += &view.table(width);
    let words = super::words::headlines(r);
    if !words.is_empty() {
        s += "\n";
        for h in words {
            s += &format!("{h}\n");
        }
    }
    s += &super::statements::text(r);
    if let Some(m) = view.method() {
        s += &format!("\n{m}\n");
    }
    if let Some(c) = super::analysis::carry_over_line(r) {
        s += &format!("{c}\n");
    }
    if let Some(a) = super::agents::summary(r) {
        s += &format!("\n{a}");
    }
    for w in &r.warnings {
        s += &format!("\nwarning: {w}\n");
    }
    s
}

/// Closed loop's sections: one per thread count.
pub(super) fn by_threads(r: &Results, width: usize) -> String {
    let mut s = String::new();
    let mut threads: Vec<u32> = r.cells.iter().map(|c| c.threads).collect();
    threads.dedup();
    let timed = r.queries_per_trial.is_some();
    // A WAL column when some variant writes one (PostgreSQL; MySQL with its binary log).
    let wal = r
        .cells
        .iter()
        .any(|c| c.wal_bytes_per_query_median.is_some_and(|w| w > 0.0));
    for t in threads {
        s += &format!("\nthreads {t}\n");
        s += &format!(
            "  {:<width$} {:>10} {:>6}  {:<46} {:>8} {:>13} {:>9}{}{}\n",
            "variant",
            "qps",
            "blocks",
            "overhead [95% CI]",
            "p95 ms",
            "server µs/q",
            "log B/q",
            if wal { "   WAL B/q" } else { "" },
            if timed { "    time s" } else { "" }
        );
        for c in r.cells.iter().filter(|c| c.threads == t) {
            let time = if timed {
                format!(" {:>9.2}", c.duration_s_median)
            } else {
                String::new()
            };
            let wal_bytes = if wal {
                format!(" {:>9}", fmt_opt(c.wal_bytes_per_query_median, 0))
            } else {
                String::new()
            };
            s += &format!(
                "  {:<width$} {:>10.0} {:>6}  {:<46} {:>8.3} {:>13} {:>9}{wal_bytes}{time}\n",
                c.variant,
                c.qps_median,
                c.trials.len(),
                overhead_text(r, c),
                c.p95_ms_median,
                fmt_opt(c.server_cpu_us_per_query_median, 1),
                fmt_opt(c.log_bytes_per_query_median, 0),
            );
            for e in &c.effects {
                if let Some(o) = &e.overhead {
                    s += &format!(
                        "  {:<width$}   {} alone (vs {}): {}\n",
                        "",
                        e.factor,
                        e.against,
                        Interval::overhead(o)
                    );
                }
            }
        }
        s += &super::analysis::table_lines(r, t);
    }
    s
}
