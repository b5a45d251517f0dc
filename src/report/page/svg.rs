//! Charts as SVG, written by hand: no fonts or native libraries are needed to make them, and
//! a browser renders the text with its own sans-serif. Two shapes cover every chart: lines
//! over thread counts (with optional 95% CI bars and a zero line) and grouped bars.

use std::fmt::Write;

/// Okabe-Ito: distinguishable with every common colour-vision deficiency.
pub const PALETTE: [&str; 8] = [
    "#000000", "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#8C6D1F",
];

/// Every chart's size and margins (the legend sits in the right one).
pub const W: f64 = 640.0;
/// See `W`.
pub const H: f64 = 360.0;
/// See `W`.
pub const LEFT: f64 = 74.0;
/// See `W`.
pub const RIGHT: f64 = 150.0;
/// See `W`.
pub const TOP: f64 = 40.0;
/// See `W`.
pub const BOTTOM: f64 = 52.0;

/// One line (or one bar colour): values per x position, optional CI per position.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend label.
    pub name: String,
    /// One value per x label (None: no point there).
    pub values: Vec<Option<f64>>,
    /// Optional 95% interval per x label.
    pub ci: Vec<Option<(f64, f64)>>,
    /// Palette index.
    pub color: usize,
}

/// HTML/XML-escape text (SVG labels, and the pages around them).
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Axis description.
#[derive(Debug, Clone)]
pub struct Axes<'a> {
    /// Chart title.
    pub title: &'a str,
    /// X axis label (with unit).
    pub x_label: &'a str,
    /// Y axis label (with unit).
    pub y_label: &'a str,
    /// Labels of the x positions.
    pub x_ticks: &'a [String],
    /// Draw a bold line at y = 0 and include 0 in the range.
    pub zero_line: bool,
}

/// Round tick steps (1, 2, 5 × 10^k) covering [lo, hi].
pub fn nice_ticks(lo: f64, hi: f64, target: usize) -> Vec<f64> {
    let (lo, hi) = if hi - lo < 1e-12 {
        (lo - 1.0, hi + 1.0)
    } else {
        (lo, hi)
    };
    let raw = (hi - lo) / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let start = (lo / step).floor() * step;
    let mut ticks = vec![];
    let mut v = start;
    // Up to and including the first tick at or above the maximum.
    loop {
        ticks.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
        if v >= hi - step * 1e-9 || ticks.len() >= 50 {
            break;
        }
        v += step;
    }
    ticks
}

/// A tick label with as many decimals as the step needs (every label alike).
fn fmt_tick(v: f64, step: f64) -> String {
    if step >= 1e6 {
        format!("{}M", v / 1e6)
    } else if step >= 1e4 {
        format!("{}k", v / 1e3)
    } else {
        let decimals = (-step.log10().floor()).max(0.0) as usize;
        format!("{v:.decimals$}")
    }
}

struct Frame {
    y0: f64,
    y1: f64,
    n: usize,
}

impl Frame {
    fn x(&self, i: usize) -> f64 {
        let w = W - LEFT - RIGHT;
        LEFT + w * (i as f64 + 0.5) / self.n.max(1) as f64
    }
    fn y(&self, v: f64) -> f64 {
        let h = H - TOP - BOTTOM;
        TOP + h * (1.0 - (v - self.y0) / (self.y1 - self.y0))
    }
}

fn frame(axes: &Axes, series: &[Series], bars: bool) -> (String, Frame) {
    let mut vals: Vec<f64> = series
        .iter()
        .flat_map(|s| s.values.iter().flatten().copied())
        .filter(|v| v.is_finite())
        .collect();
    if axes.zero_line || bars {
        vals.push(0.0);
    }
    let ends = series
        .iter()
        .flat_map(|s| s.ci.iter().flatten().flat_map(|(a, b)| [*a, *b]))
        .filter(|v| v.is_finite());
    let (lo, hi) = y_range(&vals, ends);
    let ticks = nice_ticks(lo, hi, 5);
    let f = Frame {
        y0: *ticks.first().unwrap_or(&lo),
        y1: *ticks.last().unwrap_or(&hi),
        n: axes.x_ticks.len(),
    };
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" aria-label="{t}" font-family="sans-serif" font-size="12">
<title>{t}</title>
<rect width="{W}" height="{H}" fill="#ffffff"/>
<text x="{cx}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{t}</text>
"##,
        t = esc(axes.title),
        cx = (LEFT + W - RIGHT) / 2.0
    );
    let step = if ticks.len() > 1 {
        ticks[1] - ticks[0]
    } else {
        1.0
    };
    for t in &ticks {
        let y = f.y(*t);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" x2="{x2}" y1="{y:.1}" y2="{y:.1}" stroke="#e3e3e3"/><text x="{tx}" y="{ty:.1}" text-anchor="end">{l}</text>"##,
            x2 = W - RIGHT,
            tx = LEFT - 6.0,
            ty = y + 4.0,
            l = fmt_tick(*t, step)
        );
    }
    if axes.zero_line {
        let y = f.y(0.0);
        let _ = writeln!(
            s,
            r##"<line class="zero" x1="{LEFT}" x2="{x2}" y1="{y:.1}" y2="{y:.1}" stroke="#555555" stroke-width="1.5" stroke-dasharray="5 3"/>"##,
            x2 = W - RIGHT
        );
    }
    for (i, label) in axes.x_ticks.iter().enumerate() {
        let _ = writeln!(
            s,
            r##"<text x="{x:.1}" y="{y}" text-anchor="middle">{l}</text>"##,
            x = f.x(i),
            y = H - BOTTOM + 18.0,
            l = esc(label)
        );
    }
    let _ = writeln!(
        s,
        r##"<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{yb}" stroke="#333"/><line x1="{LEFT}" x2="{xr}" y1="{yb}" y2="{yb}" stroke="#333"/>
<text x="{cx}" y="{xl}" text-anchor="middle">{xlab}</text>
<text transform="translate(18 {cy}) rotate(-90)" text-anchor="middle">{ylab}</text>"##,
        yb = H - BOTTOM,
        xr = W - RIGHT,
        cx = (LEFT + W - RIGHT) / 2.0,
        xl = H - 12.0,
        cy = (TOP + H - BOTTOM) / 2.0,
        xlab = esc(axes.x_label),
        ylab = esc(axes.y_label)
    );
    for (k, se) in series.iter().enumerate() {
        let y = TOP + 10.0 + 20.0 * k as f64;
        let x = W - RIGHT + 14.0;
        let _ = writeln!(
            s,
            r##"<rect x="{x}" y="{ry}" width="14" height="10" fill="{c}"/><text x="{tx}" y="{ty}">{n}</text>"##,
            ry = y - 9.0,
            tx = x + 20.0,
            ty = y,
            c = PALETTE[se.color % PALETTE.len()],
            n = esc(&se.name)
        );
    }
    (s, f)
}

/// The range a chart plots: every value, and the intervals' ends as far as they stay within
/// the values' own span again on either side: one wild interval (±300 points over four
/// blocks) must not flatten every other; it is drawn clipped, with an arrow at the edge.
fn y_range(values: &[f64], ends: impl Iterator<Item = f64>) -> (f64, f64) {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let span = (hi - lo).max(0.1 * hi.abs().max(lo.abs())).max(1e-9);
    let (floor, ceiling) = (lo - span, hi + span);
    ends.fold((lo, hi), |(a, b), e| {
        (a.min(e.max(floor)), b.max(e.min(ceiling)))
    })
}

/// Lines over the x positions, with CI bars where given.
pub fn line_chart(axes: &Axes, series: &[Series]) -> String {
    let (mut s, f) = frame(axes, series, false);
    let spread = 4.0;
    for (k, se) in series.iter().enumerate() {
        let c = PALETTE[se.color % PALETTE.len()];
        // Offset series slightly so CI bars at one x do not hide each other.
        let dx = (k as f64 - (series.len() as f64 - 1.0) / 2.0) * spread;
        let pts: Vec<(f64, f64)> = se
            .values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.filter(|v| v.is_finite()).map(|v| (f.x(i) + dx, f.y(v))))
            .collect();
        if pts.len() > 1 {
            let d: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
            let _ = writeln!(
                s,
                r##"<polyline class="series" fill="none" stroke="{c}" stroke-width="2" points="{}"/>"##,
                d.join(" ")
            );
        }
        for (i, ci) in se.ci.iter().enumerate() {
            if let Some((lo, hi)) = ci.filter(|(a, b)| a.is_finite() && b.is_finite()) {
                let x = f.x(i) + dx;
                let (a, b) = (f.y(lo.max(f.y0)), f.y(hi.min(f.y1)));
                let _ = writeln!(
                    s,
                    r##"<path class="ci" d="M{x:.1},{a:.1}V{b:.1}M{l:.1},{a:.1}H{r:.1}M{l:.1},{b:.1}H{r:.1}" stroke="{c}" stroke-width="1.5" fill="none"><title>{lo:.1} to {hi:.1}</title></path>"##,
                    l = x - 4.0,
                    r = x + 4.0
                );
                // An end past the plotted range: an arrow at the edge points on.
                for (past, y, dir) in [(lo < f.y0, a, 1.0), (hi > f.y1, b, -1.0)] {
                    if past {
                        let _ = writeln!(
                            s,
                            r##"<path class="clipped" d="M{l:.1},{y:.1}L{r:.1},{y:.1}L{x:.1},{t:.1}Z" fill="{c}"/>"##,
                            l = x - 5.0,
                            r = x + 5.0,
                            t = y + 8.0 * dir
                        );
                    }
                }
            }
        }
        for (x, y) in pts {
            let _ = writeln!(
                s,
                r##"<circle class="point" cx="{x:.1}" cy="{y:.1}" r="3.5" fill="{c}"/>"##
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

/// Grouped bars: one group per x position, one bar per series.
pub fn bar_chart(axes: &Axes, series: &[Series]) -> String {
    let (mut s, f) = frame(axes, series, true);
    let group_w = (W - LEFT - RIGHT) / f.n.max(1) as f64 * 0.8;
    let bar_w = group_w / series.len().max(1) as f64;
    for (k, se) in series.iter().enumerate() {
        let c = PALETTE[se.color % PALETTE.len()];
        for (i, v) in se.values.iter().enumerate() {
            let Some(v) = v.filter(|v| v.is_finite()) else {
                continue;
            };
            let x = f.x(i) - group_w / 2.0 + bar_w * k as f64;
            let (y0, y1) = (f.y(0.0), f.y(v));
            let _ = writeln!(
                s,
                r##"<rect class="bar" x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="{c}"><title>{n}: {v:.1}</title></rect>"##,
                y = y0.min(y1),
                w = (bar_w - 2.0).max(1.0),
                h = (y0 - y1).abs(),
                n = esc(&se.name)
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        let t = nice_ticks(0.0, 47_000.0, 5);
        assert_eq!(t.first(), Some(&0.0));
        assert!(*t.last().unwrap() >= 47_000.0);
        assert_eq!(t[1] - t[0], 10_000.0);
        let t = nice_ticks(-3.2, 21.5, 5);
        assert!(t[0] <= -3.2 && *t.last().unwrap() >= 21.5);
        assert!(t.contains(&0.0));
    }

    #[test]
    fn a_chart_is_well_formed_svg_with_a_zero_line() {
        let axes = Axes {
            title: "Overhead <%>",
            x_label: "client threads",
            y_label: "overhead, % of throughput",
            x_ticks: &["1".to_string(), "16".to_string()],
            zero_line: true,
        };
        let s = Series {
            name: "general-log".into(),
            values: vec![Some(5.0), Some(20.0)],
            ci: vec![Some((2.0, 8.0)), Some((15.0, 25.0))],
            color: 1,
        };
        let svg = line_chart(&axes, &[s]);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("class=\"zero\""));
        assert_eq!(svg.matches("class=\"ci\"").count(), 2);
        assert!(svg.contains("Overhead &lt;%&gt;"));
    }

    #[test]
    fn tick_labels_share_one_precision() {
        assert_eq!(fmt_tick(0.8, 0.2), "0.8");
        assert_eq!(fmt_tick(1.0, 0.2), "1.0");
        assert_eq!(fmt_tick(0.05, 0.05), "0.05");
        assert_eq!(fmt_tick(20.0, 10.0), "20");
        assert_eq!(fmt_tick(40_000.0, 10_000.0), "40k");
    }

    #[test]
    fn one_wild_interval_is_clipped_not_the_scale_of_all() {
        let axes = Axes {
            title: "Overhead",
            x_label: "client threads",
            y_label: "overhead, % of throughput",
            x_ticks: &["1".to_string(), "16".to_string()],
            zero_line: true,
        };
        let s = Series {
            name: "slow-log".into(),
            values: vec![Some(-12.0), Some(20.0)],
            ci: vec![Some((-360.0, 69.0)), Some((15.0, 25.0))],
            color: 1,
        };
        let svg = line_chart(&axes, &[s]);
        // The values span −12 to 20: the axis stops within one span of them, not at −400.
        let (lo, hi) = y_range(&[-12.0, 20.0, 0.0], [-360.0, 69.0, 15.0, 25.0].into_iter());
        assert!(
            (-44.0..=-12.0).contains(&lo) && (25.0..=52.0).contains(&hi),
            "{lo} {hi}"
        );
        assert!(!svg.contains(">-400<") && !svg.contains(">-300<"), "{svg}");
        assert_eq!(
            svg.matches("class=\"clipped\"").count(),
            2,
            "both ends: {svg}"
        );
        assert!(svg.contains("<title>-360.0 to 69.0</title>"));
        // Intervals within range are drawn whole, without arrows.
        let calm = Series {
            name: "general-log".into(),
            values: vec![Some(5.0), Some(20.0)],
            ci: vec![Some((2.0, 8.0)), Some((15.0, 25.0))],
            color: 2,
        };
        assert!(!line_chart(&axes, &[calm]).contains("clipped"));
    }
}
