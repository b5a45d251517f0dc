//! A live run (`dbtax live`) set beside another run of the same feature (`dbtax compare`):
//! the server CPU each found per statement, where and at what rate, and the difference of
//! the two with its interval. The runs are independent (one on production's own traffic,
//! the other on dbtax's load, or two live runs), so the difference's interval combines the
//! two intervals' widths; where it holds zero the two agree.

use super::html::STYLE;
use super::svg::esc;
use crate::results::Results;
use std::fmt::Write;

/// One figure of one run: a feature's server CPU per statement added, where it was found.
#[derive(Debug, Clone, PartialEq)]
pub struct CostRow {
    /// The feature.
    pub feature: String,
    /// Where it was found, in words ("production's own traffic", "8 threads at 1500/s").
    pub at: String,
    /// The statements (transactions) per second it was found at.
    pub rate: f64,
    /// µs of server CPU added per statement: value and its 95% interval.
    pub cpu: Option<(f64, f64, f64)>,
}

/// The figures of a run: a live run's per feature, a lab run's per cell of each variant
/// that is one feature against its baseline.
pub fn rows(r: &Results) -> Vec<CostRow> {
    if let Some(l) = &r.live {
        return l
            .estimates
            .iter()
            .map(|e| CostRow {
                feature: l.features[e.feature].clone(),
                at: "production's own traffic".into(),
                rate: e.rate,
                cpu: e
                    .cpu_us_per_statement
                    .map(|i| (i.value, i.ci95.0, i.ci95.1)),
            })
            .collect();
    }
    r.cells
        .iter()
        .filter_map(|c| {
            let v = r.variants.iter().find(|v| v.name == c.variant)?;
            let feature = v.feature.clone().filter(|_| !r.is_baseline(&v.name))?;
            let rate = c.rate.as_ref().map_or(c.qps_median, |x| x.achieved_median);
            Some(CostRow {
                feature,
                at: match &c.rate {
                    Some(x) => format!("{} threads at {:.0}/s", c.threads, x.achieved_median),
                    None => format!("{} threads, closed loop", c.threads),
                },
                rate,
                cpu: c
                    .server_cpu_delta_us
                    .as_ref()
                    .map(|d| (d.estimate.value, d.estimate.ci95[0], d.estimate.ci95[1])),
            })
        })
        .collect()
}

/// The difference `b - a` of two independent estimates, with a 95% interval from their
/// intervals' half-widths (each taken as 1.96 standard errors).
pub fn difference(a: (f64, f64, f64), b: (f64, f64, f64)) -> (f64, f64, f64) {
    let se = |x: (f64, f64, f64)| (x.2 - x.1) / 2.0 / 1.96;
    let d = b.0 - a.0;
    let half = 1.96 * (se(a).powi(2) + se(b).powi(2)).sqrt();
    (d, d - half, d + half)
}

/// Each feature both runs measured: A's figures, B's, and each of B's against A's first.
pub struct Beside {
    /// The feature.
    pub feature: String,
    /// A's rows, then B's.
    pub a: Vec<CostRow>,
    /// B's rows.
    pub b: Vec<CostRow>,
}

/// The features both runs measured.
pub fn beside(a: &Results, b: &Results) -> Vec<Beside> {
    let (ra, rb) = (rows(a), rows(b));
    let mut features: Vec<String> = ra.iter().map(|r| r.feature.clone()).collect();
    features.dedup();
    features
        .into_iter()
        .filter_map(|f| {
            let a: Vec<CostRow> = ra.iter().filter(|r| r.feature == f).cloned().collect();
            let b: Vec<CostRow> = rb.iter().filter(|r| r.feature == f).cloned().collect();
            (!b.is_empty()).then_some(Beside { feature: f, a, b })
        })
        .collect()
}

fn cpu_text(c: Option<(f64, f64, f64)>) -> String {
    c.map_or("-".into(), |(v, lo, hi)| {
        crate::report::interval::Interval::of(v, (lo, hi), " µs", 2).to_string()
    })
}

/// B's row against A's first: the difference and whether the two agree.
fn verdict(a: &CostRow, b: &CostRow) -> String {
    match (a.cpu, b.cpu) {
        (Some(x), Some(y)) => {
            let d = difference(x, y);
            format!(
                "{}: {}",
                cpu_text(Some(d)),
                if d.1 <= 0.0 && 0.0 <= d.2 {
                    "agree (the interval holds 0)"
                } else {
                    "differ"
                }
            )
        }
        _ => "no interval on one side".into(),
    }
}

const METHOD: &str = "The two runs are independent: the difference's interval combines their \
                      intervals' widths (each a 95% interval, taken as 1.96 standard errors). \
                      A live run's figure is production's traffic at its own rate and mix; a \
                      lab run's, dbtax's load at its threads and rate: set them beside each \
                      other at a similar rate.";

/// The terminal comparison.
pub fn render_text(a: &Results, b: &Results) -> String {
    let mut s = format!(
        "A: {} ({})  {}\nB: {} ({})  {}\n\n",
        a.name,
        a.target.server_version,
        a.target.url,
        b.name,
        b.target.server_version,
        b.target.url
    );
    let all = beside(a, b);
    if all.is_empty() {
        return s + "The two results have no feature in common.\n";
    }
    for f in &all {
        s += &format!("{}: server CPU per statement added\n", f.feature);
        for (side, rows) in [("A", &f.a), ("B", &f.b)] {
            for r in rows {
                s += &format!(
                    "  {side} {:<34} {:>9.0}/s  {}\n",
                    r.at,
                    r.rate,
                    cpu_text(r.cpu)
                );
            }
        }
        if let Some(first) = f.a.first() {
            for r in &f.b {
                s += &format!("  B - A ({}): {}\n", r.at, verdict(first, r));
            }
        }
    }
    s + "\n" + METHOD + "\n"
}

/// The comparison as a self-contained page.
pub fn render_html(a: &Results, b: &Results) -> String {
    let mut s = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>dbtax compare</title><style>{STYLE}</style></head><body>\n<h1>dbtax compare</h1>\n<p>A: <b>{}</b> — {}<br>B: <b>{}</b> — {}</p>\n",
        esc(&format!("{} ({})", a.name, a.target.server_version)),
        esc(&a.target.url),
        esc(&format!("{} ({})", b.name, b.target.server_version)),
        esc(&b.target.url)
    );
    for f in beside(a, b) {
        let _ = writeln!(
            s,
            "<h2>{}: server CPU per statement added</h2>\n<table><tr><th>run</th><th>where</th><th>rate</th><th>µs [95% CI]</th><th>B - A</th></tr>",
            esc(&f.feature)
        );
        for (side, rows) in [("A", &f.a), ("B", &f.b)] {
            for r in rows {
                let against = match (side, f.a.first()) {
                    ("B", Some(first)) => verdict(first, r),
                    _ => String::new(),
                };
                let _ = writeln!(
                    s,
                    "<tr><td>{side}</td><td>{}</td><td>{:.0}/s</td><td>{}</td><td>{}</td></tr>",
                    esc(&r.at),
                    r.rate,
                    esc(&cpu_text(r.cpu)),
                    esc(&against)
                );
            }
        }
        s += "</table>\n";
    }
    let _ = writeln!(s, "<p>{}</p>", esc(METHOD));
    for (side, r) in [("A", a), ("B", b)] {
        for c in crate::report::view(r).charts() {
            let _ = writeln!(s, "<h3>{side}</h3><figure>{}</figure>", c.svg);
        }
    }
    s + "</body></html>\n"
}

#[cfg(test)]
mod tests {
    use super::difference;

    #[test]
    fn the_difference_of_two_intervals_widens_as_their_widths_add_in_quadrature() {
        // Two intervals of half-width 1.96 (a standard error of 1 each): the difference's
        // standard error is sqrt(2).
        let (d, lo, hi) = difference((10.0, 8.04, 11.96), (12.0, 10.04, 13.96));
        assert!((d - 2.0).abs() < 1e-12);
        let half = 1.96 * 2f64.sqrt();
        assert!((lo - (2.0 - half)).abs() < 1e-9 && (hi - (2.0 + half)).abs() < 1e-9);
        // Adding the widths instead (a plausible slip) would give 3.92 each side.
        assert!(hi - d < 3.9);
    }
}
