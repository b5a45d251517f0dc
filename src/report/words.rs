//! The answer in words: one sentence per variant, for the top of the report and the end of
//! the terminal table. A number within noise is never worded as a cost or a gain.

use super::interval::Interval;
use crate::results::{Cell, Overhead, Results};
use crate::stats::overhead::{MIN_BLOCKS, robust_to_tell};

/// How a variant reads in a sentence.
pub fn phrase(r: &Results, variant: &str, feature: Option<&str>) -> String {
    let postgres = r.target.kind.contains("postgres");
    match feature.unwrap_or(variant) {
        "general-log" | "log-statement" if postgres => {
            "the statement log (log_statement = 'all')".into()
        }
        "slow-log" | "log-min-duration" if postgres => {
            "the duration log (log_min_duration_statement = 0)".into()
        }
        "audit" | "pgaudit" if postgres => "the pgaudit extension (pgaudit.log = 'all')".into(),
        "sync-commit" => "synchronous commit (synchronous_commit = on)".into(),
        "full-page-writes" => "full-page writes (full_page_writes = on)".into(),
        "general-log" => "the general log".into(),
        "slow-log" => "the slow log (long_query_time=0)".into(),
        "audit" => "the audit plugin".into(),
        "audit-idle" => "the audit plugin, loaded with its logging off".into(),
        "binlog-sync" => "sync_binlog=1".into(),
        "redo-flush" => "innodb_flush_log_at_trx_commit=1".into(),
        "binlog" => "the binary log".into(),
        "performance-schema" => "the performance schema".into(),
        _ => format!("'{variant}'"),
    }
}

/// "thread" or "threads".
pub fn plural(t: u32) -> &'static str {
    if t == 1 { "thread" } else { "threads" }
}

/// The answer in words, one sentence per variant (the run's view says how), and what the
/// reader must know to take them: whether server and load shared the machine's cores.
pub fn headlines(r: &Results) -> Vec<String> {
    let mut h = super::view::of(r).headlines();
    if let Some(c) = r.cpus.as_ref().filter(|c| c.shared()) {
        h.push(format!(
            "Server and load shared this machine's cores (CPU {}, not pinned): how the \
             scheduler shared them is part of these numbers.",
            crate::cpus::format_list(&c.load)
        ));
    }
    h
}

/// How `significant` was decided, for the reader of a table or a report.
pub fn multiplicity(r: &Results) -> Option<String> {
    super::view::of(r).method()
}

/// One sentence per non-baseline variant, about the thread count fixed before the run
/// (`headline_threads`, else the highest): never picked from the results. A cost or a gain is
/// claimed only when Holm's adjusted test says so; when the robust estimate tells another
/// story than the mean (outlier blocks), the sentence uses the robust one and says why.
pub(super) fn closed_loop_headlines(r: &Results) -> Vec<String> {
    r.variants
        .iter()
        .skip(1)
        .filter(|v| !super::is_baseline(r, &v.name))
        .filter_map(|v| {
            let mut cells: Vec<&Cell> = r
                .cells
                .iter()
                .filter(|c| {
                    c.variant == v.name && !(c.trials.is_empty() && c.disturbed_trials.is_empty())
                })
                .collect();
            cells.sort_by_key(|c| c.threads);
            let top = cells
                .iter()
                .find(|c| c.threads == r.headline_threads)
                .or(cells.last())
                .copied()?;
            let mut who = phrase(r, &v.name, v.feature.as_deref());
            if v.feature.as_deref().is_some_and(|f| f != v.name) {
                who += &format!(" ({})", v.name);
            }
            let at = format!("at {} {}", top.threads, plural(top.threads));
            let Some(o) = top.overhead.as_ref() else {
                if let Some(why) = &top.no_interval {
                    return Some(capitalize(&format!(
                        "{who}: no interval {at}: {why}. Run again when the machine is \
                         quieter, or with a longer budget."
                    )));
                }
                return Some(capitalize(&format!(
                    "{who}: too few blocks {at} for an interval ({}; an interval needs at \
                     least {MIN_BLOCKS}).",
                    super::table::too_few(top)
                )));
            };
            // The robust estimate only when it passed the same Holm family as the means.
            let robust = robust_to_tell(o);
            let (value, ci) = match robust {
                Some(e) => (e.value, e.ci95),
                None => (o.pct, o.ci95_pct),
            };
            let shown = Interval::overhead(&Overhead {
                pct: value,
                ci95_pct: ci,
                ..o.clone()
            })
            .unsigned()
            .plain();
            let measurable = robust.is_some() || o.significant;
            let spans_zero = ci[0] <= 0.0 && ci[1] >= 0.0;
            let mut s = if !measurable && spans_zero {
                format!("{who}: no measurable cost {at} ({shown}, within noise)")
            } else if !measurable {
                format!(
                    "{who}: no cost established {at} ({shown}, not significant once adjusted \
                     for the {} tests of this experiment)",
                    r.analysis.intervals
                )
            } else if value >= 0.0 {
                format!("{who} costs {shown} of throughput {at}")
            } else {
                let gain = Interval::overhead(&Overhead {
                    pct: -value,
                    ci95_pct: [-ci[1], -ci[0]],
                    ..o.clone()
                })
                .unsigned()
                .plain();
                format!("{who} raises throughput by {gain} {at}")
            };
            if robust.is_some() {
                s += &format!(
                    " (robust estimate: {} outlier block(s) pull the mean to {:.1}%)",
                    o.outlier_blocks.len(),
                    o.pct
                );
            }
            if v.baseline != "off" && !v.baseline.is_empty() {
                s += &format!(" against '{}'", v.baseline);
            }
            let mut costs = vec![];
            let cpu = top.server_cpu_delta_us.as_ref();
            if let Some(d) = cpu {
                let e = Interval::estimate(&d.estimate);
                let share = d
                    .pct_of_baseline
                    .map(|p| format!(" ({p:+.0}% of the baseline's)"))
                    .unwrap_or_default();
                if d.measured() {
                    costs.push(format!("{e} µs of server CPU{share}"));
                } else {
                    costs.push(format!("server CPU within noise ({e} µs)"));
                }
            }
            if let Some(b) = top.log_bytes_per_query_median.filter(|b| *b >= 0.5) {
                costs.push(format!("{b:.0} bytes of log"));
            }
            let base_wal = r
                .cells
                .iter()
                .find(|c| c.variant == v.baseline && c.threads == top.threads)
                .and_then(|c| c.wal_bytes_per_query_median);
            if let (Some(w), Some(b)) = (top.wal_bytes_per_query_median, base_wal)
                && (w - b).abs() >= 0.5
            {
                costs.push(format!(
                    "{:+.0} bytes of WAL ({w:.0} against {b:.0})",
                    w - b
                ));
            }
            if !costs.is_empty() {
                s += &format!("; {} per query", costs.join(" and "));
            }
            // The steadier estimate: a cost the server's CPU shows while throughput cannot
            // tell it from noise yet.
            if !measurable && cpu.is_some_and(|d| d.measured() && d.estimate.value > 0.0) {
                s += " (the cost is measured in server CPU, not yet in throughput)";
            }
            let others: Vec<String> = cells
                .iter()
                .filter(|c| c.threads != top.threads)
                .filter_map(|c| {
                    let o = c.overhead.as_ref()?;
                    Some(format!(
                        "at {} {}: {}",
                        c.threads,
                        plural(c.threads),
                        Interval::overhead(o)
                    ))
                })
                .collect();
            if !others.is_empty() {
                s += &format!(" ({})", others.join("; "));
            }
            s.push('.');
            Some(capitalize(&s))
        })
        .collect()
}

/// How `significant` was decided in closed loop.
pub(super) fn closed_loop_method(r: &Results) -> Option<String> {
    (r.analysis.intervals > 1).then(|| {
        let cpu = r.cells.iter().any(|c| {
            c.server_cpu_delta_us
                .as_ref()
                .is_some_and(|d| d.p_value.is_some())
        });
        let mut family = vec!["each overhead", "its robust companion"];
        if cpu {
            family.push("each server-CPU difference");
        }
        if !r.analysis.interactions.is_empty() {
            family.push("each interaction");
        }
        format!(
            "\"Within noise\": the 95% interval spans 0, or Holm's adjustment over the {} \
             tests of this experiment ({}) does not let it count as measured. The headline is \
             about {} threads, fixed before the run.",
            r.analysis.intervals,
            family.join(", "),
            r.headline_threads
        )
    })
}

/// The first letter in upper case.
pub fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}
