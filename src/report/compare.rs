//! `dbtax compare A B`: one experiment on two servers, machines or versions, side by side
//! (study 000 put MySQL beside Drizzle on the same workload).

use super::html::STYLE;
use super::interval::Interval;
use super::svg::{Axes, Series, bar_chart, esc, line_chart};
use crate::results::{Cell, Results};
use std::fmt::Write;

/// A (variant, threads) present in both results.
pub struct Pair<'a> {
    /// Variant name.
    pub variant: &'a str,
    /// Client threads.
    pub threads: u32,
    /// The cell in A.
    pub a: &'a Cell,
    /// The cell in B.
    pub b: &'a Cell,
}

/// Cells present in both, in A's order.
pub fn pairs<'a>(a: &'a Results, b: &'a Results) -> Vec<Pair<'a>> {
    a.cells
        .iter()
        .filter_map(|ca| {
            let cb = b
                .cells
                .iter()
                .find(|cb| cb.variant == ca.variant && cb.threads == ca.threads)?;
            Some(Pair {
                variant: &ca.variant,
                threads: ca.threads,
                a: ca,
                b: cb,
            })
        })
        .collect()
}

fn label(r: &Results) -> String {
    format!("{} ({})", r.name, r.target.server_version)
}

fn ov(c: &Cell) -> String {
    match &c.overhead {
        None => "baseline".into(),
        Some(o) => Interval::overhead(o).noise_label(" (noise)").to_string(),
    }
}

/// The terminal comparison.
pub fn render_text(a: &Results, b: &Results) -> String {
    let mut s = format!(
        "A: {}  {}\nB: {}  {}\n\n",
        label(a),
        a.target.url,
        label(b),
        b.target.url
    );
    let ps = pairs(a, b);
    if ps.is_empty() {
        return s + "The two results have no (variant, threads) in common.\n";
    }
    s += &format!(
        "{:<14} {:>7} {:>10} {:>10} {:>7}  {:<30} {:<30}\n",
        "variant", "threads", "qps A", "qps B", "B/A", "overhead A", "overhead B"
    );
    for p in ps {
        s += &format!(
            "{:<14} {:>7} {:>10.0} {:>10.0} {:>7.2}  {:<30} {:<30}\n",
            p.variant,
            p.threads,
            p.a.qps_median,
            p.b.qps_median,
            p.b.qps_median / p.a.qps_median.max(1e-9),
            ov(p.a),
            ov(p.b)
        );
    }
    s
}

/// The comparison as a self-contained page.
pub fn render_html<'a>(a: &'a Results, b: &'a Results) -> String {
    let ps = pairs(a, b);
    let mut s = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>dbtax compare</title><style>{STYLE}</style></head><body>\n<h1>dbtax compare</h1>\n<p>A: <b>{}</b> — {}<br>B: <b>{}</b> — {}</p>\n",
        esc(&label(a)),
        esc(&a.target.url),
        esc(&label(b)),
        esc(&b.target.url)
    );
    s += "<table><tr><th>variant</th><th>threads</th><th>qps A</th><th>qps B</th><th>B/A</th><th>overhead A</th><th>overhead B</th></tr>\n";
    for p in &ps {
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{:.0}</td><td>{:.0}</td><td>{:.2}</td><td>{}</td><td>{}</td></tr>",
            esc(p.variant),
            p.threads,
            p.a.qps_median,
            p.b.qps_median,
            p.b.qps_median / p.a.qps_median.max(1e-9),
            esc(&ov(p.a)),
            esc(&ov(p.b))
        );
    }
    s += "</table>\n";
    let ticks: Vec<String> = ps
        .iter()
        .map(|p| format!("{} @{}", p.variant, p.threads))
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
