//! The charts of a results.json: throughput, overhead with CIs, p95 latency (each against
//! client threads), and the cost per query (server CPU, log bytes) per variant.

use super::svg::{Axes, Series, bar_chart, line_chart};
use crate::results::{Cell, Results};

/// A named SVG chart.
#[derive(Debug, Clone)]
pub struct Chart {
    /// File stem (`throughput` → charts/throughput.svg).
    pub name: &'static str,
    /// The SVG document.
    pub svg: String,
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

/// One series per variant (the baseline skipped when asked), a value and an optional
/// interval at each x position; `at` finds a variant's cell at a position.
pub fn series_over<'r, X>(
    r: &'r Results,
    xs: &[X],
    at: impl Fn(&str, &X) -> Option<&'r Cell>,
    skip_baseline: bool,
    value: impl Fn(&Cell) -> Option<f64>,
    ci: impl Fn(&Cell) -> Option<(f64, f64)>,
) -> Vec<Series> {
    r.variants
        .iter()
        .enumerate()
        .skip(usize::from(skip_baseline))
        .map(|(i, v)| Series {
            name: v.name.clone(),
            values: xs.iter().map(|x| at(&v.name, x).and_then(&value)).collect(),
            ci: xs.iter().map(|x| at(&v.name, x).and_then(&ci)).collect(),
            color: i,
        })
        .collect()
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

/// Every chart of the report (the run's view says which).
pub fn all(r: &Results) -> Vec<Chart> {
    super::view::of(r).charts()
}

/// Closed loop's charts, each against client threads.
pub(super) fn by_threads(r: &Results) -> Vec<Chart> {
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
