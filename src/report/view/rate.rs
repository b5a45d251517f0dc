//! Rate mode's answer: what a feature adds to latency and server CPU at a fixed load, and
//! whether it can sustain that load at all. Sections are load points (threads × rate level);
//! the table, the words, the HTML and the charts all read them from here.

use super::View;
use crate::report::interval::Interval;
use crate::report::page::charts::{Chart, series_over};
use crate::report::page::svg::{Axes, bar_chart, esc, line_chart};
use crate::report::words::{capitalize, phrase, plural};
use crate::results::{Cell, Estimate, Results};
use std::fmt::Write;

/// A run at a rate, as every renderer shows it.
pub struct RateView<'a>(pub &'a Results);

impl View for RateView<'_> {
    fn headlines(&self) -> Vec<String> {
        headlines(self.0)
    }

    fn method(&self) -> Option<String> {
        method(self.0)
    }

    fn table(&self, width: usize) -> String {
        table(self.0, width)
    }

    fn html(&self) -> String {
        "<h2>Results</h2>\n<p>At a fixed rate: added latency (from each event's intended start) \
         and server CPU against the baseline at the same threads and rate, per block, with 95% \
         confidence intervals; \"noise\" (grey) when an interval spans 0.</p>\n"
            .to_string()
            + &html_tables(self.0)
            + &html_bill(self.0)
    }

    fn charts(&self) -> Vec<Chart> {
        charts(self.0)
    }
}

/// One load point: a thread count and a rate level, in the order they were planned.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Client threads.
    pub threads: u32,
    /// The level as asked ("50%", "2000/s").
    pub level: String,
    /// The events per second it came to.
    pub asked: f64,
}

impl Point {
    /// "50% at 8 threads" for a chart's axis.
    pub fn tick(&self, several_threads: bool) -> String {
        if several_threads {
            format!("{} · {}t", self.level, self.threads)
        } else {
            self.level.clone()
        }
    }
}

/// Every load point of a rate-mode run, by threads then by the order of the levels.
pub fn points(r: &Results) -> Vec<Point> {
    let levels = r
        .rate
        .as_ref()
        .map(|x| x.levels.clone())
        .unwrap_or_default();
    let mut threads: Vec<u32> = r.cells.iter().map(|c| c.threads).collect();
    threads.sort_unstable();
    threads.dedup();
    threads
        .iter()
        .flat_map(|&threads| {
            levels.iter().filter_map(move |level| {
                let c = r.cells.iter().find(|c| at_level(c, threads, level))?;
                Some(Point {
                    threads,
                    level: level.clone(),
                    asked: c.rate.as_ref()?.asked,
                })
            })
        })
        .collect()
}

fn at(c: &Cell, p: &Point) -> bool {
    at_level(c, p.threads, &p.level)
}

fn at_level(c: &Cell, threads: u32, level: &str) -> bool {
    c.threads == threads && c.rate.as_ref().is_some_and(|r| r.level == level)
}

fn cell<'a>(r: &'a Results, variant: &str, p: &Point) -> Option<&'a Cell> {
    r.cells.iter().find(|c| c.variant == variant && at(c, p))
}

/// "+0.021 ms [+0.010, +0.032]".
pub(crate) fn ms(e: &Estimate) -> String {
    format!("{} ms", Interval::estimate(e).decimals(3))
}

/// The rate a level comes to, in words: "50% of capacity (2345 events/s)".
fn load_words(c: &Cell) -> String {
    let Some(rate) = &c.rate else {
        return String::new();
    };
    if rate.level.ends_with('%') {
        format!("{} of capacity ({:.0} events/s)", rate.level, rate.asked)
    } else {
        format!("{:.0} events/s", rate.asked)
    }
}

/// A load point that fell behind its schedule: how far behind the sends ran (median over its
/// trials of each trial's median and p99 lag), and who set the pace. dbtax's own load did when
/// its clients used nine tenths or more of the CPUs they had to themselves (`cpus.load`, not
/// shared with the server); then the server's figures are not what limited the rate. With
/// CPUs shared, or load from agents, that cannot be told and is not said.
pub fn pace_words(r: &Results, c: &Cell) -> Option<String> {
    let med = |f: &dyn Fn(&crate::results::Trial) -> Option<f64>| {
        dbtax_stats::intervals::sample::median(&c.trials.iter().filter_map(f).collect::<Vec<_>>())
    };
    let p50 = med(&|t| t.schedule_lag_ms.as_ref().map(|l| l.p50))?;
    let p99 = med(&|t| t.schedule_lag_ms.as_ref().map(|l| l.p99))?;
    let mut s = format!(
        "its sends ran {p50:.1} ms behind their schedule at the median, {p99:.1} ms at p99"
    );
    let own = r
        .cpus
        .as_ref()
        .filter(|x| !x.shared() && !x.load.is_empty())
        .map(|x| x.load.len() as f64);
    let used = med(&|t| {
        t.agents
            .is_empty()
            .then(|| t.client_cpu_us_per_query * t.qps / 1e6)
    });
    if let (Some(n), Some(u)) = (own, used) {
        if u >= 0.9 * n {
            let _ = write!(
                s,
                "; dbtax's own clients used {u:.2} of the {n:.0} CPUs they had: they, not the \
                 server, set this pace (give the load more CPUs with --cpus, or load from other \
                 hosts with --agents)"
            );
        } else {
            let _ = write!(
                s,
                "; dbtax's own clients used {u:.2} of the {n:.0} CPUs they had: the server set \
                 this pace"
            );
        }
    }
    Some(s)
}

/// "9.3 GB [9.2, 9.4]": bytes with the unit their value calls for.
fn bytes_words(e: &Estimate) -> String {
    let (k, unit) = [(1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")]
        .into_iter()
        .find(|(k, _)| e.value.abs() >= *k)
        .unwrap_or((1.0, "bytes"));
    format!(
        "{} {unit}",
        Interval::estimate(&Estimate {
            value: e.value / k,
            ci95: [e.ci95[0] / k, e.ci95[1] / k],
        })
        .unsigned()
        .decimals(1)
        .plain()
    )
}

/// The bill at a load point, in one sentence: "At 2000 queries/s the general log adds 0.05
/// [0.03, 0.07] of a core (0.6% of 8), 9.3 GB [9.2, 9.4] of log a day and 0.02 ms [0.01,
/// 0.04] at p99." and, when the lab's figure is a lower bound for production, why.
pub fn bill_words(r: &Results, b: &crate::results::Bill) -> String {
    let who = r
        .variants
        .iter()
        .find(|v| v.name == b.variant)
        .map(|v| phrase(r, &v.name, v.feature.as_deref()))
        .unwrap_or_else(|| b.variant.clone());
    let mut parts = vec![];
    if let Some(c) = &b.cpu_cores {
        let share = b
            .cpu_share
            .as_ref()
            .zip(b.server_cores)
            .map(|(s, n)| format!(" ({:.1}% of {n})", s.value))
            .unwrap_or_default();
        parts.push(format!(
            "{} of a core{share}",
            Interval::estimate(c).unsigned().decimals(3).plain()
        ));
    }
    if let Some(l) = b.log_bytes_per_day.as_ref().filter(|l| l.value >= 1.0) {
        parts.push(format!("{} of log a day", bytes_words(l)));
    }
    if let Some(w) = b
        .wal_bytes_per_day
        .as_ref()
        .filter(|w| w.value.abs() >= 1.0)
    {
        parts.push(format!("{} of WAL a day", bytes_words(w)));
    }
    if let Some(d) = &b.latency_delta_ms {
        parts.push(if Interval::estimate(&d.p99).spans_zero() {
            format!("nothing measurable at p99 ({}, within noise)", ms(&d.p99))
        } else {
            format!("{} at p99", ms(&d.p99))
        });
    }
    let mut s = format!(
        "At {:.0} queries/s ({}, {} {}) {who} adds {}.",
        b.rate,
        b.level,
        b.threads,
        plural(b.threads),
        join_and(&parts)
    );
    if !b.lower_bound.is_empty() {
        s += &format!(
            " For production this is a lower bound: {}.",
            b.lower_bound.join("; ")
        );
    }
    s
}

/// One sentence per variant and rate level, at the headline thread count: the bill first.
fn headlines(r: &Results) -> Vec<String> {
    let mut out: Vec<String> = r
        .bill
        .iter()
        .filter(|b| b.threads == r.headline_threads)
        .map(|b| bill_words(r, b))
        .collect();
    let pts: Vec<Point> = points(r)
        .into_iter()
        .filter(|p| p.threads == r.headline_threads)
        .collect();
    for v in r.variants.iter().filter(|v| !r.is_baseline(&v.name)) {
        let who = phrase(r, &v.name, v.feature.as_deref());
        for p in &pts {
            let (Some(c), Some(base)) = (cell(r, &v.name, p), cell(r, &v.baseline, p)) else {
                continue;
            };
            let (Some(rate), Some(base_rate)) = (&c.rate, &base.rate) else {
                continue;
            };
            let at = format!(
                "at {} and {} {}",
                load_words(c),
                p.threads,
                plural(p.threads)
            );
            let pace = |c: &Cell| pace_words(r, c).map_or(String::new(), |w| format!("; {w}"));
            let s = if base_rate.saturated {
                format!(
                    "{at} the server does not keep up even without {who} (the baseline \
                     achieved {:.0} of {:.0} events/s{}): this load is past its capacity, so \
                     added latency means nothing here",
                    base_rate.achieved_median,
                    base_rate.asked,
                    pace(base)
                )
            } else if rate.saturated {
                format!(
                    "{who} cannot sustain this load {at}: it achieved {:.0} events/s \
                     ({} of {} trials fell behind{}), the baseline {:.0}",
                    rate.achieved_median,
                    rate.saturated_trials,
                    c.trials.len(),
                    pace(c),
                    base_rate.achieved_median
                )
            } else {
                let mut parts = vec![];
                if let Some(d) = &c.latency_delta_ms {
                    for (name, e) in [("p50", &d.p50), ("p99", &d.p99)] {
                        let i = Interval::estimate(e);
                        parts.push(if i.spans_zero() {
                            format!("nothing measurable to {name} ({}, within noise)", ms(e))
                        } else if e.value >= 0.0 {
                            format!("{} to {name}", ms(e))
                        } else {
                            format!("{} to {name} (faster)", ms(e))
                        });
                    }
                }
                if let Some(d) = &c.server_cpu_delta_us {
                    let i = Interval::estimate(&d.estimate);
                    parts.push(if !d.measured() {
                        format!("server CPU within noise ({i} µs per query)")
                    } else {
                        format!("{i} µs of server CPU per query")
                    });
                }
                format!("{who} adds {} {at}", join_and(&parts))
            };
            let mut s = capitalize(&s);
            if let Some(b) = c.log_bytes_per_query_median.filter(|b| *b >= 0.5) {
                s += &format!("; {b:.0} bytes of log per query");
            }
            s.push('.');
            out.push(s);
        }
    }
    out
}

fn join_and(parts: &[String]) -> String {
    match parts {
        [] => "nothing it could measure".into(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// How the rate-mode intervals were made, for the reader.
fn method(r: &Results) -> Option<String> {
    let rr = r.rate.as_ref()?;
    let mut s = format!(
        "Open loop: {} arrivals at each rate; latency is measured from each event's intended \
         start (queueing included), so a feature that slows answers shows in it even when \
         throughput holds. Added latency is the difference of the two variants' percentiles \
         within each block, with a 95% t interval over blocks (per interval, not adjusted for \
         multiplicity). A variant is saturated at a rate when most of its trials achieved \
         under 95% of it or fell further behind through the trial.",
        rr.arrival
    );
    if !rr.calibration.is_empty() {
        let caps: Vec<String> = rr
            .calibration
            .iter()
            .map(|c| {
                format!(
                    "{:.0} events/s at {} {}",
                    c.capacity_tps,
                    c.threads,
                    plural(c.threads)
                )
            })
            .collect();
        let _ = write!(
            s,
            " Capacity, measured first in closed loop with the baseline: {}.",
            caps.join(", ")
        );
    }
    Some(s)
}

fn delta_text(e: Option<&Estimate>) -> String {
    e.map(|e| Interval::estimate(e).decimals(3).to_string())
        .unwrap_or_else(|| "-".into())
}

fn saturation(c: &Cell) -> &'static str {
    match &c.rate {
        Some(r) if r.saturated => "SATURATED",
        Some(r) if r.saturated_trials > 0 => "some trials behind",
        _ => "",
    }
}

/// The terminal table's sections: one per load point.
fn table(r: &Results, width: usize) -> String {
    let mut s = String::new();
    for p in points(r) {
        let _ = writeln!(
            s,
            "\nthreads {}, rate {} ({:.0} events/s asked)",
            p.threads, p.level, p.asked
        );
        let _ = writeln!(
            s,
            "  {:<width$} {:>10} {:>6} {:>9} {:>9}  {:<28} {:<28} {:<24} {:>8}",
            "variant",
            "achieved/s",
            "blocks",
            "p50 ms",
            "p99 ms",
            "added p50 ms [95% CI]",
            "added p99 ms [95% CI]",
            "Δ server µs/q [95% CI]",
            "log B/q",
        );
        for c in r.cells.iter().filter(|c| at(c, &p)) {
            let rate = c.rate.clone().unwrap_or_default();
            let d = c.latency_delta_ms.as_ref();
            let _ = writeln!(
                s,
                "  {:<width$} {:>10.0} {:>6} {:>9.3} {:>9.3}  {:<28} {:<28} {:<24} {:>8}  {}",
                c.variant,
                rate.achieved_median,
                c.trials.len(),
                rate.p50_ms_median,
                rate.p99_ms_median,
                if r.is_baseline(&c.variant) {
                    "baseline".into()
                } else {
                    delta_text(d.map(|d| &d.p50))
                },
                delta_text(d.map(|d| &d.p99)),
                c.server_cpu_delta_us
                    .as_ref()
                    .map(|e| Interval::estimate(&e.estimate).to_string())
                    .unwrap_or_else(|| "-".into()),
                c.log_bytes_per_query_median
                    .map(|b| format!("{b:.0}"))
                    .unwrap_or_else(|| "-".into()),
                saturation(c)
            );
        }
    }
    s
}

/// The HTML tables: one per load point.
fn html_tables(r: &Results) -> String {
    let mut s = String::new();
    for p in points(r) {
        let _ = writeln!(
            s,
            "<h3>{} client thread{}, rate {} ({:.0} events/s)</h3>\n<table><tr><th>variant</th><th>achieved events/s</th><th>blocks</th><th>p50 ms</th><th>p99 ms</th><th>added p50 ms [95% CI]</th><th>added p99 ms [95% CI]</th><th>Δ server CPU µs/query [95% CI]</th><th>server CPU, cores</th><th>log bytes/query</th><th></th></tr>",
            p.threads,
            if p.threads == 1 { "" } else { "s" },
            esc(&p.level),
            p.asked
        );
        for c in r.cells.iter().filter(|c| at(c, &p)) {
            let rate = c.rate.clone().unwrap_or_default();
            let d = c.latency_delta_ms.as_ref();
            let class = |e: Option<&Estimate>| match e {
                Some(e) if Interval::estimate(e).spans_zero() => "noise",
                Some(_) => "sig",
                None => "",
            };
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{:.0}</td><td>{}</td><td>{:.3}</td><td>{:.3}</td><td class=\"{}\">{}</td><td class=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td{}>{}</td></tr>",
                esc(&c.variant),
                rate.achieved_median,
                c.trials.len(),
                rate.p50_ms_median,
                rate.p99_ms_median,
                class(d.map(|d| &d.p50)),
                delta_text(d.map(|d| &d.p50)),
                class(d.map(|d| &d.p99)),
                delta_text(d.map(|d| &d.p99)),
                c.server_cpu_delta_us
                    .as_ref()
                    .map(|e| Interval::estimate(&e.estimate).to_string())
                    .unwrap_or_else(|| "–".into()),
                rate.server_cores_median
                    .map(|x| format!("{x:.2}"))
                    .unwrap_or_else(|| "–".into()),
                c.log_bytes_per_query_median
                    .map(|b| format!("{b:.0}"))
                    .unwrap_or_else(|| "–".into()),
                if saturation(c).is_empty() {
                    ""
                } else {
                    " class=\"warn\""
                },
                saturation(c)
            );
        }
        s += "</table>\n";
    }
    s
}

/// The charts of a rate-mode run, each against load (the points, in order).
fn charts(r: &Results) -> Vec<Chart> {
    let pts = points(r);
    let several = pts.iter().any(|p| p.threads != pts[0].threads);
    let ticks: Vec<String> = pts.iter().map(|p| p.tick(several)).collect();
    let x_label = if several {
        "rate · client threads"
    } else {
        "rate (share of capacity, or events/s)"
    };
    let axes = |title, y_label, zero_line| Axes {
        title,
        x_label,
        y_label,
        x_ticks: &ticks,
        zero_line,
    };
    let series = |skip_baseline: bool,
                  value: &dyn Fn(&Cell) -> Option<f64>,
                  ci: &dyn Fn(&Cell) -> Option<(f64, f64)>| {
        let at = |v: &str, p: &Point| cell(r, v, p);
        series_over(r, &pts, at, skip_baseline, value, ci)
    };
    let none = |_: &Cell| None;
    let delta = |f: fn(&crate::results::LatencyDelta) -> &Estimate| {
        move |c: &Cell| c.latency_delta_ms.as_ref().map(|d| f(d).value)
    };
    let delta_ci = |f: fn(&crate::results::LatencyDelta) -> &Estimate| {
        move |c: &Cell| {
            c.latency_delta_ms
                .as_ref()
                .map(|d| (f(d).ci95[0], f(d).ci95[1]))
        }
    };
    vec![
        Chart {
            name: "added_latency_p50",
            svg: line_chart(
                &axes(
                    "Added p50 latency against load, with 95% CI",
                    "added p50 latency, ms",
                    true,
                ),
                &series(true, &delta(|d| &d.p50), &delta_ci(|d| &d.p50)),
            ),
        },
        Chart {
            name: "added_latency_p99",
            svg: line_chart(
                &axes(
                    "Added p99 latency against load, with 95% CI",
                    "added p99 latency, ms",
                    true,
                ),
                &series(true, &delta(|d| &d.p99), &delta_ci(|d| &d.p99)),
            ),
        },
        Chart {
            name: "latency_p99",
            svg: line_chart(
                &axes(
                    "p99 latency from the intended start",
                    "p99 latency, ms (median of trials)",
                    false,
                ),
                &series(false, &|c| c.rate.as_ref().map(|x| x.p99_ms_median), &none),
            ),
        },
        Chart {
            name: "server_utilisation",
            svg: line_chart(
                &axes(
                    "Server CPU utilisation against load",
                    "server CPU, cores (median of trials)",
                    false,
                ),
                &series(
                    false,
                    &|c| c.rate.as_ref().and_then(|x| x.server_cores_median),
                    &none,
                ),
            ),
        },
        Chart {
            name: "log_bytes",
            svg: bar_chart(
                &axes("Log written per query", "log, bytes per query", false),
                &series(false, &|c| c.log_bytes_per_query_median, &none),
            ),
        },
    ]
}

/// The bill at each load point, as a table (nothing in a run without one).
fn html_bill(r: &Results) -> String {
    if r.bill.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "<h2>The bill at each rate</h2>\n<p>What each variant adds against its baseline at \
         that load, per block, with 95% intervals: server CPU in cores (and as a share of the \
         server's), feature log and WAL a day at that rate, and latency at p99.</p>\n<table \
         class=\"bill\"><tr><th>variant</th><th>threads</th><th>rate</th><th>queries/s</th>\
         <th>server cores</th><th>share</th><th>log a day</th><th>WAL a day</th>\
         <th>p99 added</th></tr>\n",
    );
    let or_dash = |o: Option<String>| o.unwrap_or_else(|| "-".into());
    for b in &r.bill {
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.0}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&b.variant),
            b.threads,
            esc(&b.level),
            b.rate,
            or_dash(
                b.cpu_cores
                    .as_ref()
                    .map(|c| Interval::estimate(c).decimals(3).plain().to_string())
            ),
            or_dash(
                b.cpu_share
                    .as_ref()
                    .zip(b.server_cores)
                    .map(|(e, n)| format!("{:.1}% of {n}", e.value))
            ),
            or_dash(b.log_bytes_per_day.as_ref().map(bytes_words)),
            or_dash(b.wal_bytes_per_day.as_ref().map(bytes_words)),
            or_dash(b.latency_delta_ms.as_ref().map(|d| ms(&d.p99))),
        );
    }
    s += "</table>\n";
    for b in r.bill.iter().filter(|b| !b.lower_bound.is_empty()) {
        let _ = writeln!(
            s,
            "<p class=\"note\">{} at {}: a lower bound for production: {}.</p>",
            esc(&b.variant),
            esc(&b.level),
            esc(&b.lower_bound.join("; "))
        );
    }
    s
}
