//! The answer in words: one sentence per variant, for the top of the report and the end of
//! the terminal table.

use super::interval::Interval;
use crate::results::{Cell, Results};

/// How a variant reads in a sentence.
pub fn phrase(variant: &str, feature: Option<&str>) -> String {
    match feature.unwrap_or(variant) {
        "general-log" => "the general log".into(),
        "slow-log" => "the slow log (long_query_time=0)".into(),
        "audit" => "the audit plugin".into(),
        "binlog-sync" => "sync_binlog=1".into(),
        "redo-flush" => "innodb_flush_log_at_trx_commit=1".into(),
        "binlog" => "the binary log".into(),
        "performance-schema" => "the performance schema".into(),
        _ => format!("'{variant}'"),
    }
}

fn ci(c: &Cell) -> String {
    c.overhead
        .as_ref()
        .map(|o| Interval::overhead(o).unsigned().plain().to_string())
        .unwrap_or_default()
}

fn plural(t: u32) -> &'static str {
    if t == 1 { "thread" } else { "threads" }
}

/// One sentence per non-baseline variant, at its highest thread count, with the other
/// thread counts after it.
pub fn headlines(r: &Results) -> Vec<String> {
    r.variants
        .iter()
        .skip(1)
        .filter_map(|v| {
            let mut cells: Vec<&Cell> = r
                .cells
                .iter()
                .filter(|c| c.variant == v.name && c.overhead.is_some())
                .collect();
            cells.sort_by_key(|c| c.threads);
            // The highest thread count where the cost is measurable, else the highest.
            let top = cells
                .iter()
                .rev()
                .find(|c| c.overhead.as_ref().is_some_and(|o| o.significant))
                .or(cells.last())
                .copied()?;
            let o = top.overhead.as_ref()?;
            let mut who = phrase(&v.name, v.feature.as_deref());
            if v.feature.as_deref().is_some_and(|f| f != v.name) {
                who += &format!(" ({})", v.name);
            }
            let mut s = if o.significant {
                let verb = if o.pct >= 0.0 { "costs" } else { "gains" };
                format!(
                    "{who} {verb} {} of throughput at {} {}",
                    ci(top),
                    top.threads,
                    plural(top.threads)
                )
            } else {
                format!(
                    "{who}: no cost measurable at {} {} ({}, within noise)",
                    top.threads,
                    plural(top.threads),
                    ci(top)
                )
            };
            if v.baseline != "off" && !v.baseline.is_empty() {
                s += &format!(" against '{}'", v.baseline);
            }
            let mut costs = vec![];
            if let Some(d) = &top.server_cpu_delta_us {
                costs.push(format!("{:+.1} µs of server CPU", d.value));
            }
            if let Some(b) = top.log_bytes_per_query_median.filter(|b| *b >= 0.5) {
                costs.push(format!("{b:.0} bytes of log"));
            }
            if !costs.is_empty() {
                s += &format!("; {} per query", costs.join(" and "));
            }
            if cells.len() > 1 {
                let others: Vec<String> = cells
                    .iter()
                    .filter(|c| c.threads != top.threads)
                    .map(|c| {
                        format!(
                            "{:.1}% at {}",
                            c.overhead.as_ref().map(|o| o.pct).unwrap_or(0.0),
                            c.threads
                        )
                    })
                    .collect();
                s += &format!(" (elsewhere: {})", others.join(", "));
            }
            s.push('.');
            Some(capitalize(&s))
        })
        .collect()
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}
