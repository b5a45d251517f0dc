//! `dbtax compare A B`: one experiment on two servers, machines or versions, side by side
//! (study 000 put MySQL beside Drizzle on the same workload).

use super::html::STYLE;
use super::svg::{Axes, Series, bar_chart, esc, line_chart};
use crate::report::interval::Interval;
use crate::results::{Cell, Estimate, Results};
use dbtax_stats::intervals::ratio;
use std::fmt::Write;

/// B's throughput over A's with its 95% interval (the ratio of geometric means).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ratio {
    /// Geometric-mean ratio B/A.
    pub value: f64,
    /// 95% interval of the ratio.
    pub ci95: [f64; 2],
}

impl From<Estimate> for Ratio {
    fn from(e: Estimate) -> Ratio {
        Ratio {
            value: e.value,
            ci95: e.ci95,
        }
    }
}

impl std::fmt::Display for Ratio {
    /// "0.912 [0.884, 0.941]", as every interval is printed (`Interval`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let e = Estimate {
            value: self.value,
            ci95: self.ci95,
        };
        write!(f, "{}", Interval::estimate(&e).unsigned().decimals(3))
    }
}

/// Whether A and B ran interleaved, block by block (`--compare-target`): then each block's
/// B/A is a paired ratio. Otherwise the runs are separate samples.
pub fn interleaved(a: &Results, b: &Results) -> bool {
    a.seed == b.seed
        && a.paired_with.as_deref() == Some(b.target.url.as_str())
        && b.paired_with.as_deref() == Some(a.target.url.as_str())
}

/// B/A throughput of one (variant, threads): paired by block when the two ran interleaved,
/// else unpaired (`stats::ratio`).
pub fn b_over_a(p: &Pair<'_>, paired: bool) -> Option<Ratio> {
    if paired {
        let blocks: Vec<(f64, f64)> =
            dbtax_stats::intervals::paired::partners(&p.a.trials, &p.b.trials)
                .into_iter()
                .map(|(ta, tb)| (ta.qps, tb.qps))
                .collect();
        ratio::paired(&blocks).map(Ratio::from)
    } else {
        let qps = |c: &Cell| -> Vec<f64> { c.trials.iter().map(|t| t.qps).collect() };
        ratio::unpaired(&qps(p.a), &qps(p.b)).map(Ratio::from)
    }
}

/// How B/A was estimated, for the reader.
fn method(paired: bool) -> &'static str {
    if paired {
        "B/A: the two servers ran interleaved, block by block; each block's B/A is a paired \
         ratio and the interval is a t interval over blocks."
    } else {
        "B/A: the two runs did not run side by side, so the comparison is unpaired: Welch's \
         interval on the log throughput of their trials (machine drift between the runs is \
         inside it; `dbtax run --compare-target` interleaves the servers)."
    }
}

fn ratio_text(p: &Pair<'_>, paired: bool) -> String {
    b_over_a(p, paired).map_or_else(
        || format!("{:.3}", p.b.qps_median / p.a.qps_median.max(1e-9)),
        |r| r.to_string(),
    )
}

/// A (variant, threads) present in both results.
pub struct Pair<'a> {
    /// Variant name.
    pub variant: &'a str,
    /// Client threads.
    pub threads: u32,
    /// Rate mode: the rate level both ran at ("50%", "2000/s").
    pub level: Option<&'a str>,
    /// The cell in A.
    pub a: &'a Cell,
    /// The cell in B.
    pub b: &'a Cell,
}

/// Cells present in both (same variant, threads and, in rate mode, rate level), in A's
/// order.
pub fn pairs<'a>(a: &'a Results, b: &'a Results) -> Vec<Pair<'a>> {
    let level = |c: &'a Cell| c.rate.as_ref().map(|r| r.level.as_str());
    a.cells
        .iter()
        .filter_map(|ca| {
            let cb = b.cells.iter().find(|cb| {
                cb.variant == ca.variant && cb.threads == ca.threads && level(cb) == level(ca)
            })?;
            Some(Pair {
                variant: &ca.variant,
                threads: ca.threads,
                level: level(ca),
                a: ca,
                b: cb,
            })
        })
        .collect()
}

/// The variant as the comparison's rows name it: with its rate level in rate mode.
fn row_name(p: &Pair<'_>) -> String {
    match p.level {
        Some(l) => format!("{} @{l}", p.variant),
        None => p.variant.to_string(),
    }
}

/// The bill at a rate (`--at-rate`) that A or B has: its variant, threads and rate level,
/// and each side's sentence (None: that side has no bill there).
pub struct BillRow {
    /// Variant name.
    pub variant: String,
    /// Client threads.
    pub threads: u32,
    /// The rate level as asked ("2000/s", "50%").
    pub level: String,
    /// A's bill in words.
    pub a: Option<String>,
    /// B's bill in words.
    pub b: Option<String>,
}

/// Every (variant, threads, rate level) with a bill in A or B, A's order first.
pub fn bills(a: &Results, b: &Results) -> Vec<BillRow> {
    let mut rows: Vec<BillRow> = vec![];
    for (side, r) in [(0, a), (1, b)] {
        for bill in &r.bill {
            let words = crate::report::view::rate::bill_words(r, bill);
            let at = rows.iter().position(|x| {
                x.variant == bill.variant && x.threads == bill.threads && x.level == bill.level
            });
            let row = match at {
                Some(i) => &mut rows[i],
                None => {
                    rows.push(BillRow {
                        variant: bill.variant.clone(),
                        threads: bill.threads,
                        level: bill.level.clone(),
                        a: None,
                        b: None,
                    });
                    rows.last_mut().expect("just pushed")
                }
            };
            if side == 0 {
                row.a = Some(words);
            } else {
                row.b = Some(words);
            }
        }
    }
    rows
}

/// What a side without a bill at that point says.
const NO_BILL: &str = "no bill at this rate (not run at it, or not in rate mode)";

fn bills_text(a: &Results, b: &Results) -> String {
    let rows = bills(a, b);
    if rows.is_empty() {
        return String::new();
    }
    let mut s = "\nThe bill at each rate:\n".to_string();
    for r in rows {
        let _ = writeln!(
            s,
            "  {} at {} {}, {}\n    A: {}\n    B: {}",
            r.variant,
            r.threads,
            crate::report::words::plural(r.threads),
            r.level,
            r.a.as_deref().unwrap_or(NO_BILL),
            r.b.as_deref().unwrap_or(NO_BILL)
        );
    }
    s
}

fn bills_html(a: &Results, b: &Results) -> String {
    let rows = bills(a, b);
    if rows.is_empty() {
        return String::new();
    }
    let mut s = "<h2>The bill at each rate</h2>\n<table class=\"bill\"><tr><th>variant</th>\
                 <th>threads</th><th>rate</th><th>A</th><th>B</th></tr>\n"
        .to_string();
    for r in rows {
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.variant),
            r.threads,
            esc(&r.level),
            esc(r.a.as_deref().unwrap_or(NO_BILL)),
            esc(r.b.as_deref().unwrap_or(NO_BILL))
        );
    }
    s + "</table>\n"
}

fn label(r: &Results) -> String {
    format!("{} ({})", r.name, r.target.server_version)
}

/// A cell's cost: its overhead, or in rate mode the p99 latency it adds.
fn ov(c: &Cell) -> String {
    if c.rate.is_some() {
        return match &c.latency_delta_ms {
            None => "baseline".into(),
            Some(d) => format!("p99 {}", crate::report::view::rate::ms(&d.p99)),
        };
    }
    match &c.overhead {
        None => "baseline".into(),
        Some(o) => Interval::overhead(o).noise_label(" (noise)").to_string(),
    }
}

/// The cost columns' names: the overhead, or in rate mode the added p99.
fn cost_header(r: &Results) -> [&'static str; 2] {
    if r.rate.is_some() {
        ["added latency A", "added latency B"]
    } else {
        ["overhead A", "overhead B"]
    }
}

/// One variant's capacity at one objective on each side.
#[derive(Debug, Clone, PartialEq)]
pub struct CapacityRow {
    /// The objective.
    pub slo: String,
    /// The variant.
    pub variant: String,
    /// Each side's capacity with its interval and change, in words.
    pub a: String,
    /// See `a`.
    pub b: String,
    /// B's capacity over A's, or a dash.
    pub ratio: String,
}

/// Every (objective, variant) either side found a capacity for, in A's order then B's.
pub fn capacities(a: &Results, b: &Results) -> Vec<CapacityRow> {
    let mut keys: Vec<(String, String)> = vec![];
    for c in a.capacity.iter().chain(&b.capacity) {
        let k = (c.slo.clone(), c.variant.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let side = |r: &Results, k: &(String, String)| {
        r.capacity
            .iter()
            .find(|c| c.slo == k.0 && c.variant == k.1)
            .cloned()
    };
    let said = |c: &Option<crate::results::Capacity>| match c {
        None => "not measured".to_string(),
        Some(c) => {
            let Some(rate) = c.rate else {
                return c.note.clone().unwrap_or_else(|| "no capacity".into());
            };
            let mut s = crate::report::view::capacity::per_second(rate);
            if let Some([lo, hi]) = c.ci95 {
                let _ = write!(s, " [{:.0}, {:.0}]", lo, hi);
            }
            if let (Some(p), Some([lo, hi])) = (c.cost_pct, c.cost_ci95_pct) {
                let _ = write!(s, ", {p:+.1}% [{lo:+.1}, {hi:+.1}]");
            }
            s
        }
    };
    keys.iter()
        .map(|k| {
            let (ca, cb) = (side(a, k), side(b, k));
            let ratio = match (
                ca.as_ref().and_then(|c| c.rate),
                cb.as_ref().and_then(|c| c.rate),
            ) {
                (Some(x), Some(y)) if x > 0.0 => format!("×{:.3}", y / x),
                _ => "—".into(),
            };
            CapacityRow {
                slo: k.0.clone(),
                variant: k.1.clone(),
                a: said(&ca),
                b: said(&cb),
                ratio,
            }
        })
        .collect()
}

fn capacities_text(a: &Results, b: &Results) -> String {
    let mut s =
        "Capacity at each objective (each side's change against its own baseline):\n".to_string();
    for r in capacities(a, b) {
        let _ = writeln!(
            s,
            "  {} at {}: B/A {}\n    A: {}\n    B: {}",
            r.variant, r.slo, r.ratio, r.a, r.b
        );
    }
    s + "\nThe two runs were not interleaved: B/A has no interval; each side's own change does.\n"
}

/// The terminal comparison.
pub fn render_text(a: &Results, b: &Results) -> String {
    if a.live.is_some() || b.live.is_some() {
        return super::beside_live::render_text(a, b);
    }
    let mut s = format!(
        "A: {}  {}\nB: {}  {}\n\n",
        label(a),
        a.target.url,
        label(b),
        b.target.url
    );
    if !a.capacity.is_empty() {
        return s + &capacities_text(a, b);
    }
    let ps = pairs(a, b);
    if ps.is_empty() {
        return s + "The two results have no (variant, threads) in common.\n";
    }
    let paired = interleaved(a, b);
    s += &format!(
        "{:<14} {:>7} {:>10} {:>10}  {:<22}  {:<30} {:<30}\n",
        "variant",
        "threads",
        "qps A",
        "qps B",
        "B/A [95% CI]",
        cost_header(a)[0],
        cost_header(a)[1]
    );
    for p in ps {
        s += &format!(
            "{:<14} {:>7} {:>10.0} {:>10.0}  {:<22}  {:<30} {:<30}\n",
            row_name(&p),
            p.threads,
            p.a.qps_median,
            p.b.qps_median,
            ratio_text(&p, paired),
            ov(p.a),
            ov(p.b)
        );
    }
    s + &bills_text(a, b) + "\n" + method(paired) + "\n"
}

/// The comparison as a self-contained page.
pub fn render_html<'a>(a: &'a Results, b: &'a Results) -> String {
    if a.live.is_some() || b.live.is_some() {
        return super::beside_live::render_html(a, b);
    }
    let ps = pairs(a, b);
    let mut s = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>dbtax compare</title><style>{STYLE}</style></head><body>\n<h1>dbtax compare</h1>\n<p>A: <b>{}</b> — {}<br>B: <b>{}</b> — {}</p>\n",
        esc(&label(a)),
        esc(&a.target.url),
        esc(&label(b)),
        esc(&b.target.url)
    );
    if !a.capacity.is_empty() {
        s += "<h2>Capacity at each objective</h2>\n<table><tr><th>objective</th><th>variant</th><th>A</th><th>B</th><th>B/A</th></tr>\n";
        for r in capacities(a, b) {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&r.slo),
                esc(&r.variant),
                esc(&r.a),
                esc(&r.b),
                esc(&r.ratio)
            );
        }
        s += "</table>\n<p>Each side's capacity and its change are from its own run; B/A sets the two capacities beside each other (the runs were not interleaved: no interval for it).</p>\n";
        for (side, r) in [("A", a), ("B", b)] {
            for c in crate::report::view(r).charts() {
                let _ = writeln!(s, "<h3>{side}</h3><figure>{}</figure>", c.svg);
            }
        }
        return s + "</body></html>\n";
    }
    let paired = interleaved(a, b);
    let [ca, cb] = cost_header(a);
    let _ = writeln!(
        s,
        "<table><tr><th>variant</th><th>threads</th><th>qps A</th><th>qps B</th><th>B/A [95% CI]</th><th>{ca}</th><th>{cb}</th></tr>"
    );
    for p in &ps {
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{:.0}</td><td>{:.0}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&row_name(p)),
            p.threads,
            p.a.qps_median,
            p.b.qps_median,
            esc(&ratio_text(p, paired)),
            esc(&ov(p.a)),
            esc(&ov(p.b))
        );
    }
    let _ = writeln!(s, "</table>\n<p>{}</p>", esc(method(paired)));
    s += &bills_html(a, b);
    let ticks: Vec<String> = ps
        .iter()
        .map(|p| format!("{} @{}", row_name(p), p.threads))
        .collect();
    let axes = |title, y_label, zero_line| Axes {
        title,
        x_label: "variant @ client threads",
        y_label,
        x_ticks: &ticks,
        zero_line,
    };
    let qps = [
        Series {
            name: "A".into(),
            values: ps.iter().map(|p| Some(p.a.qps_median)).collect(),
            ci: vec![],
            color: 1,
        },
        Series {
            name: "B".into(),
            values: ps.iter().map(|p| Some(p.b.qps_median)).collect(),
            ci: vec![],
            color: 2,
        },
    ];
    let overhead = |b_side: bool, name: &str, color| {
        let pick = |p: &Pair<'a>| if b_side { p.b } else { p.a };
        Series {
            name: name.into(),
            values: ps
                .iter()
                .map(|p| pick(p).overhead.as_ref().map(|o| o.pct))
                .collect(),
            ci: ps
                .iter()
                .map(|p| {
                    pick(p)
                        .overhead
                        .as_ref()
                        .map(|o| (o.ci95_pct[0], o.ci95_pct[1]))
                })
                .collect(),
            color,
        }
    };
    let _ = write!(
        s,
        "<div class=\"charts\"><figure>{}</figure><figure>{}</figure></div>\n</body></html>\n",
        bar_chart(
            &axes("Throughput, A and B", "queries per second (median)", false),
            &qps
        ),
        line_chart(
            &axes(
                "Overhead, A and B, with 95% CI",
                "overhead, % of throughput",
                true
            ),
            &[overhead(false, "A", 1), overhead(true, "B", 2)]
        )
    );
    s
}
