//! Closed loop, the run's view when it ran at a sweep of client threads: each variant's
//! throughput overhead against its baseline, by thread count, in every form the report takes
//! (the terminal table's sections, the sentences and how they were decided, the HTML
//! tables, the charts). Beside `rate`, the view of a run at fixed rates; the renderers are
//! handed one of the two and never choose.

use super::View;
use crate::report::interval::Interval;
use crate::report::interval::verdict_of;
use crate::report::page::charts::{Chart, series_over};
use crate::report::page::svg::{Axes, Series, bar_chart, esc, line_chart};
use crate::report::words::{capitalize, phrase, plural};
use crate::results::Verdict;
use crate::results::{Cell, Overhead, Results};
use dbtax_stats::intervals::overhead::{MIN_BLOCKS, mde_of, robust_to_tell};
use dbtax_stats::intervals::verdict::NEGLIGIBLE_PCT;
use std::fmt::Write;

/// Closed loop: each variant's throughput overhead against its baseline, by thread count.
pub struct ClosedLoop<'a>(pub &'a Results);

impl View for ClosedLoop<'_> {
    fn headlines(&self) -> Vec<String> {
        let mut h = headlines(self.0);
        h.extend(crate::report::analysis::headlines(self.0));
        h
    }

    fn method(&self) -> Option<String> {
        method(self.0)
    }

    fn table(&self, width: usize) -> String {
        table(self.0, width)
    }

    fn html(&self) -> String {
        html(self.0)
    }

    fn charts(&self) -> Vec<Chart> {
        charts(self.0)
    }
}

fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map(|x| format!("{x:.digits$}"))
        .unwrap_or_else(|| "-".into())
}

/// "12.3% [10.1, 14.4]", "… within noise", "baseline", or "too few blocks (2)".
pub fn overhead_text(r: &Results, c: &Cell) -> String {
    match &c.overhead {
        None if r.is_baseline(&c.variant) => "baseline".into(),
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

/// The terminal table's sections: one per thread count.
fn table(r: &Results, width: usize) -> String {
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
            "  {:<width$} {:>10} {:>6}  {:<46} {:>6} {:>8} {:>13} {:>9}{}{}\n",
            "variant",
            "qps",
            "blocks",
            "overhead [95% CI]",
            "MDE %",
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
                "  {:<width$} {:>10.0} {:>6}  {:<46} {:>6} {:>8.3} {:>13} {:>9}{wal_bytes}{time}\n",
                c.variant,
                c.qps_median,
                c.trials.len(),
                overhead_text(r, c),
                fmt_opt(c.overhead.as_ref().and_then(mde_of), 1),
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
        s += &crate::report::analysis::table_lines(r, t);
    }
    s
}

fn f1(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.1}")).unwrap_or_else(|| "–".into())
}

/// The HTML report's results: what the overhead is, then one table per thread count.
fn html(r: &Results) -> String {
    let mut s = String::new();
    s += "<h2>Results</h2>\n<p>Overhead = 100 × (1 − qps<sub>variant</sub> / qps<sub>baseline</sub>) from block-paired ratios, with a 95% confidence interval: a cost when it is clear of 0 once adjusted for every figure of the run, else what it allows (\"at most\" its upper end, \"negligible\", \"unstable here\", or \"likely, not counted\"). MDE: the smallest cost this cell's own spread would detect 80% of the time.</p>\n";
    for t in thread_counts(r) {
        let _ = writeln!(
            s,
            "<h3>{t} client thread{}</h3>\n<table><tr><th>variant</th><th>qps (median)</th><th>blocks</th><th>overhead [95% CI]</th><th>MDE %</th><th>p95 ms</th><th>server CPU µs/query</th><th>Δ server CPU µs/query [95% CI]</th><th>log bytes/query</th></tr>",
            if t == 1 { "" } else { "s" }
        );
        for c in r.cells.iter().filter(|c| c.threads == t) {
            let class = match c.overhead.as_ref().map(verdict_of) {
                Some(Verdict::Cost | Verdict::Gain) => "sig",
                Some(_) => "noise",
                None => "",
            };
            let mde = f1(c.overhead.as_ref().and_then(mde_of));
            let delta = c
                .server_cpu_delta_us
                .as_ref()
                .map(|d| Interval::estimate(&d.estimate).to_string())
                .unwrap_or_else(|| "–".into());
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{:.0}</td><td>{}</td><td class=\"{class}\">{}</td><td>{mde}</td><td>{:.3}</td><td>{}</td><td>{delta}</td><td>{}</td></tr>",
                esc(&c.variant),
                c.qps_median,
                c.trials.len(),
                esc(&overhead_text(r, c)),
                c.p95_ms_median,
                f1(c.server_cpu_us_per_query_median),
                f1(c.log_bytes_per_query_median)
            );
        }
        s += "</table>\n";
    }
    s + &crate::report::analysis::html(r)
}

/// Thread counts in the order they appear.
pub fn thread_counts(r: &Results) -> Vec<u32> {
    let mut t: Vec<u32> = r.cells.iter().map(|c| c.threads).collect();
    t.sort_unstable();
    t.dedup();
    t
}

fn cell<'a>(r: &'a Results, variant: &str, threads: u32) -> Option<&'a Cell> {
    r.cells
        .iter()
        .find(|c| c.variant == variant && c.threads == threads)
}

fn series_of(
    r: &Results,
    skip_baseline: bool,
    value: impl Fn(&Cell) -> Option<f64>,
    ci: impl Fn(&Cell) -> Option<(f64, f64)>,
) -> Vec<Series> {
    let at = |v: &str, t: &u32| cell(r, v, *t);
    series_over(r, &thread_counts(r), at, skip_baseline, value, ci)
}

/// The report's charts, each against client threads.
fn charts(r: &Results) -> Vec<Chart> {
    let ticks: Vec<String> = thread_counts(r).iter().map(|t| t.to_string()).collect();
    let axes = |title, y_label, zero_line| Axes {
        title,
        x_label: "client threads",
        y_label,
        x_ticks: &ticks,
        zero_line,
    };
    let none = |_: &Cell| None;
    vec![
        Chart {
            name: "throughput",
            svg: line_chart(
                &axes("Throughput", "queries per second (median)", false),
                &series_of(r, false, |c| Some(c.qps_median), none),
            ),
        },
        Chart {
            name: "overhead",
            svg: line_chart(
                &axes(
                    "Overhead against the baseline, with 95% CI",
                    "overhead, % of throughput",
                    true,
                ),
                &series_of(
                    r,
                    true,
                    |c| c.overhead.as_ref().map(|o| o.pct),
                    |c| c.overhead.as_ref().map(|o| (o.ci95_pct[0], o.ci95_pct[1])),
                ),
            ),
        },
        Chart {
            name: "latency_p95",
            svg: line_chart(
                &axes("p95 latency", "p95 latency, ms (median of trials)", false),
                &series_of(r, false, |c| Some(c.p95_ms_median), none),
            ),
        },
        Chart {
            name: "server_cpu",
            svg: bar_chart(
                &axes("Server CPU per query", "server CPU, µs per query", false),
                &series_of(r, false, |c| c.server_cpu_us_per_query_median, none),
            ),
        },
        Chart {
            name: "log_bytes",
            svg: bar_chart(
                &axes("Log written per query", "log, bytes per query", false),
                &series_of(r, false, |c| c.log_bytes_per_query_median, none),
            ),
        },
    ]
}

/// One sentence per non-baseline variant, about the thread count fixed before the run
/// (`headline_threads`, else the highest): never picked from the results. A cost or a gain is
/// claimed only when Holm's adjusted test says so; when the robust estimate tells another
/// story than the mean (outlier blocks), the sentence uses the robust one and says why.
fn headlines(r: &Results) -> Vec<String> {
    r.variants
        .iter()
        .filter(|v| !r.is_baseline(&v.name))
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
                    too_few(top)
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
            let verdict = verdict_of(o);
            let measurable = matches!(verdict, Verdict::Cost | Verdict::Gain);
            let negligible = r.analysis.negligible_pct;
            let mde = mde_of(o);
            let detectable = mde
                .map(|m| format!("; the smallest cost this run could detect here is {m:.1}%"))
                .unwrap_or_default();
            let mut advice = None;
            let mut s = match verdict {
                Verdict::Cost => format!("{who} costs {shown} of throughput {at}"),
                Verdict::Likely => format!(
                    "{who}: likely a {} {at} ({shown}), but it is one of {} of this run, and \
                     among that many one clears zero by chance now and then: not counted as \
                     measured",
                    if value >= 0.0 { "cost" } else { "gain" },
                    match r.analysis.intervals {
                        n if n > 1 => format!("the {n} figures"),
                        _ => "several figures".to_string(),
                    }
                ),
                Verdict::Negligible => format!(
                    "{who}: negligible {at}: all of {shown} lies within ±{}%{detectable}",
                    negligible.unwrap_or(NEGLIGIBLE_PCT)
                ),
                Verdict::AtMost => {
                    let mut s = format!(
                        "{who} costs at most {:.1}% of throughput {at} (95% upper bound; \
                         {shown})",
                        ci[1].max(0.0)
                    );
                    match negligible {
                        Some(p) if ci[1] < p => s += &format!(", below your {p}%: negligible"),
                        Some(p) => s += &format!(", and more than your {p}% is not ruled out"),
                        None => {}
                    }
                    s + &detectable
                }
                Verdict::Unstable => {
                    let within = run_minutes(r)
                        .map(|m| {
                            if m < 2.0 {
                                format!(" in {:.0} s", m * 60.0)
                            } else {
                                format!(" in {m:.0} minutes")
                            }
                        })
                        .unwrap_or_default();
                    advice = Some("Pin the server, lengthen the budget, or run on a quieter host.");
                    match mde {
                        Some(m) => format!(
                            "{who}: this machine cannot tell a cost below {m:.0}% {at}{within} \
                             ({shown})"
                        ),
                        None => format!(
                            "{who}: this machine cannot tell how large a cost is {at}{within} \
                             ({shown})"
                        ),
                    }
                }
                Verdict::Gain => {
                    let gain = Interval::overhead(&Overhead {
                        pct: -value,
                        ci95_pct: [-ci[1], -ci[0]],
                        ..o.clone()
                    })
                    .unsigned()
                    .plain();
                    format!("{who} raises throughput by {gain} {at}")
                }
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
            if let Some(a) = advice {
                s += " ";
                s += a;
            }
            Some(capitalize(&s))
        })
        .collect()
}

/// Minutes from the first trial's start to the last one's end (set-aside trials too): what
/// the run spent; None when the trials carry no start times.
fn run_minutes(r: &Results) -> Option<f64> {
    let starts: Vec<f64> = r
        .cells
        .iter()
        .flat_map(|c| c.trials.iter().chain(&c.disturbed_trials))
        .filter_map(|t| crate::host::rfc3339_seconds(&t.started_at))
        .collect();
    let first = starts.iter().copied().reduce(f64::min)?;
    let last = starts.iter().copied().reduce(f64::max)?;
    Some(((last - first + r.trial_s + r.warmup_s) / 60.0).max(0.1))
}

/// How `significant` was decided in closed loop.
fn method(r: &Results) -> Option<String> {
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
            "A cost (or a gain) is an interval clear of 0 once Holm's adjustment over the {} \
             figures of this experiment ({}) lets it count as measured; \"likely\" is clear \
             of 0 on its own but not after that adjustment (among so many figures one clears \
             0 by chance now and then). When the interval spans 0 the cost is \"at most\" its \
             upper end, \"negligible\" when all of it lies within ±{}%, and \"unstable \
             here\" when the run could not detect a cost below {}% (its minimum detectable \
             effect: found 80% of the time at the 5% level). The headline is about {} \
             threads, fixed before the run.",
            r.analysis.intervals,
            family.join(", "),
            r.analysis.negligible_pct.unwrap_or(NEGLIGIBLE_PCT),
            dbtax_stats::intervals::verdict::UNSTABLE_MDE_PCT,
            r.headline_threads
        )
    })
}
