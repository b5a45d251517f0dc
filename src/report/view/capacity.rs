//! The view of a `--slo` run: each variant's capacity at each objective, what a feature costs
//! of it, and the chart of the quantile against the rate with the objective and the
//! capacities marked.

use super::View;
use crate::report::page::charts::Chart;
use crate::report::page::svg::{PALETTE, esc, nice_ticks};
use crate::report::words::{capitalize, phrase};
use crate::results::{Capacity, Results};
use std::fmt::Write;

/// A `--slo` run's view.
pub struct CapacityView<'r>(pub &'r Results);

/// A rate as people say it: 41,200/s.
pub fn per_second(x: f64) -> String {
    let n = x.round() as i64;
    let digits = n.abs().to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    format!("{}{out}/s", if n < 0 { "-" } else { "" })
}

fn range(ci: Option<[f64; 2]>) -> String {
    match ci {
        Some([a, b]) => format!(
            " [{}, {}]",
            per_second(a).trim_end_matches("/s"),
            per_second(b).trim_end_matches("/s")
        ),
        None => String::new(),
    }
}

fn signed(x: f64) -> String {
    if x > 0.0 {
        format!("+{x:.1}")
    } else {
        format!("{x:.1}")
    }
}

impl CapacityView<'_> {
    fn baseline_of<'a>(&'a self, c: &Capacity) -> Option<&'a Capacity> {
        let v = self.0.variants.iter().find(|v| v.name == c.variant)?;
        self.0
            .capacity
            .iter()
            .find(|b| b.slo == c.slo && b.variant == v.baseline && b.variant != c.variant)
    }

    fn sentence(&self, c: &Capacity) -> Option<String> {
        let r = self.0;
        if r.is_baseline(&c.variant) {
            return None;
        }
        let info = r.variants.iter().find(|v| v.name == c.variant)?;
        let who = capitalize(&phrase(r, &c.variant, info.feature.as_deref()));
        let base = self.baseline_of(c)?;
        let (Some(with), Some(without)) = (c.rate, base.rate) else {
            let why = c
                .note
                .as_deref()
                .or(base.note.as_deref())
                .unwrap_or("no capacity found");
            return Some(format!(
                "{who}: no capacity at {} to compare ({why}).",
                c.slo
            ));
        };
        let mut s = format!(
            "{who} {} the rate served at {} from {}{} to {}{}",
            if with < without { "lowers" } else { "raises" },
            c.slo,
            per_second(without),
            range(base.ci95),
            per_second(with),
            range(c.ci95),
        );
        match (c.cost_pct, c.cost_ci95_pct) {
            (Some(p), Some([lo, hi])) => {
                let _ = write!(s, ": {}% [{}, {}]", signed(p), signed(lo), signed(hi));
                if c.significant != Some(true) {
                    s += ", within noise";
                }
                s += ".";
            }
            _ => {
                s += ": no interval for the change (";
                s += &format!(
                    "{} measured blocks; one needs {})",
                    c.blocks.min(base.blocks),
                    crate::stats::capacity::MIN_BLOCKS
                );
                s += ".";
            }
        }
        Some(s)
    }

    fn slos(&self) -> Vec<String> {
        let mut out: Vec<String> = vec![];
        for c in &self.0.capacity {
            if !out.contains(&c.slo) {
                out.push(c.slo.clone());
            }
        }
        out
    }
}

impl View for CapacityView<'_> {
    fn headlines(&self) -> Vec<String> {
        let r = self.0;
        let mut h: Vec<String> = r.capacity.iter().filter_map(|c| self.sentence(c)).collect();
        for c in &r.capacity {
            // "Never met", and stalls set aside or kept: the words name them.
            if let Some(n) = c
                .note
                .as_deref()
                .filter(|n| n.starts_with("never met") || n.contains("stall"))
            {
                h.push(format!("{} at {}: {n}.", capitalize(&c.variant), c.slo));
            }
        }
        h
    }

    fn method(&self) -> Option<String> {
        let threads = self.0.capacity.first()?.threads;
        Some(format!(
            "Capacity: the highest rate at which the quantile of the latency (from each \
             event's intended start) stays within the objective, at {threads} client threads. \
             A bisection whose steps ran every variant in one block found each one's \
             neighbourhood; then blocks ran every variant at three fixed rates around it, in a \
             random order. The capacity is where the parabola through the mean reciprocal \
             quantiles meets the objective; its 95% interval is a t interval over those blocks \
             (a feature's change paired block by block, Holm's adjustment over the changes). \
             Blocks in which other processes took the CPU were set aside and run again, and \
             so were blocks with a stalled trial (its quantile far above its variant's other \
             blocks at that rate, with no other process's CPU to explain it)."
        ))
    }

    fn table(&self, width: usize) -> String {
        let mut s = String::new();
        for slo in self.slos() {
            let _ = writeln!(
                s,
                "\ncapacity at {slo}\n{:<width$}  {:>26}  {:>22}  {:>12}  {:>6}",
                "variant", "capacity [95% CI]", "change [95% CI]", "closed loop", "blocks"
            );
            for c in self.0.capacity.iter().filter(|c| c.slo == slo) {
                let cap = match c.rate {
                    Some(x) => format!("{}{}", per_second(x), range(c.ci95)),
                    None => "—".into(),
                };
                let change = match (c.cost_pct, c.cost_ci95_pct) {
                    (Some(p), Some([a, b])) => {
                        format!("{}% [{}, {}]", signed(p), signed(a), signed(b))
                    }
                    _ => String::new(),
                };
                let _ = writeln!(
                    s,
                    "{:<width$}  {cap:>26}  {change:>22}  {:>12}  {:>6}",
                    c.variant,
                    per_second(c.closed_loop),
                    c.blocks
                );
                if let Some(n) = &c.note {
                    let _ = writeln!(s, "{:<width$}  ({n})", "");
                }
            }
        }
        s
    }

    fn html(&self) -> String {
        let mut s = String::new();
        for slo in self.slos() {
            let _ = writeln!(
                s,
                "<h2>Capacity at {}</h2>\n<table><tr><th>variant</th><th>capacity</th><th>95% CI</th><th>change</th><th>95% CI</th><th>closed loop</th><th>measured blocks</th><th>note</th></tr>",
                esc(&slo)
            );
            for c in self.0.capacity.iter().filter(|c| c.slo == slo) {
                let _ = writeln!(
                    s,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td style=\"text-align:left\">{}</td></tr>",
                    esc(&c.variant),
                    c.rate.map(per_second).unwrap_or_default(),
                    esc(range(c.ci95).trim()),
                    c.cost_pct
                        .map(|p| format!("{}%", signed(p)))
                        .unwrap_or_default(),
                    c.cost_ci95_pct
                        .map(|[a, b]| format!("[{}, {}]", signed(a), signed(b)))
                        .unwrap_or_default(),
                    per_second(c.closed_loop),
                    c.blocks,
                    esc(c.note.as_deref().unwrap_or(""))
                );
            }
            s += "</table>\n";
        }
        s
    }

    fn charts(&self) -> Vec<Chart> {
        // One chart per objective; the file stems are fixed names.
        const NAMES: [&str; 4] = ["capacity", "capacity-2", "capacity-3", "capacity-4"];
        self.slos()
            .iter()
            .zip(NAMES)
            .map(|(slo, name)| Chart {
                name,
                svg: chart(self.0, slo),
            })
            .collect()
    }
}

/// The quantile against the rate for every variant (each trial a dot: measured ones filled,
/// search steps hollow), the objective as a dashed line, each capacity as a vertical line
/// with its interval shaded.
pub fn chart(r: &Results, slo: &str) -> String {
    use crate::report::page::svg::{BOTTOM as B, H, LEFT as L, RIGHT as R, TOP as T, W};
    let caps: Vec<&Capacity> = r.capacity.iter().filter(|c| c.slo == slo).collect();
    let Some(objective) = caps.iter().find_map(|c| c.objective) else {
        return String::new();
    };
    let q = objective.quantile;
    let pts: Vec<(usize, f64, f64, bool)> = caps
        .iter()
        .enumerate()
        .flat_map(|(k, c)| {
            c.steps
                .iter()
                .filter(|s| s.phase == "measured" || s.phase == "search")
                .map(move |s| (k, s.rate, q.of(&s.latency_ms), s.phase == "measured"))
        })
        .filter(|p| p.1.is_finite() && p.2.is_finite())
        .collect();
    let xmax = pts
        .iter()
        .map(|p| p.1)
        .chain(caps.iter().filter_map(|c| c.ci95.map(|x| x[1])))
        .fold(1.0, f64::max)
        * 1.05;
    // The y axis: up to three times the objective (a queue past capacity goes far beyond).
    let ymax = pts
        .iter()
        .map(|p| p.2)
        .fold(objective.ms * 1.2, f64::max)
        .min(objective.ms * 3.0);
    let x = |v: f64| L + (v / xmax).clamp(0.0, 1.0) * (W - L - R);
    let y = |v: f64| H - B - (v / ymax).clamp(0.0, 1.0) * (H - T - B);
    let mut s = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" font-family="sans-serif" font-size="12" role="img"><title>{t}</title>
<text x="{L}" y="22" font-size="14">{t}</text>
"##,
        t = esc(&format!(
            "{} against the rate: capacity at {slo}",
            q.label()
        ))
    );
    for t in nice_ticks(0.0, xmax, 5) {
        let _ = writeln!(
            s,
            r##"<line x1="{xv:.1}" x2="{xv:.1}" y1="{T}" y2="{yb}" stroke="#eeeeee"/><text x="{xv:.1}" y="{ty}" text-anchor="middle">{l}</text>"##,
            xv = x(t),
            yb = H - B,
            ty = H - B + 18.0,
            l = per_second(t).trim_end_matches("/s")
        );
    }
    for t in nice_ticks(0.0, ymax, 5) {
        let _ = writeln!(
            s,
            r##"<line x1="{L}" x2="{xr}" y1="{yv:.1}" y2="{yv:.1}" stroke="#e3e3e3"/><text x="{tx}" y="{ty:.1}" text-anchor="end">{t}</text>"##,
            xr = W - R,
            yv = y(t),
            tx = L - 6.0,
            ty = y(t) + 4.0
        );
    }
    let _ = writeln!(
        s,
        r##"<line x1="{L}" x2="{L}" y1="{T}" y2="{yb}" stroke="#333"/><line x1="{L}" x2="{xr}" y1="{yb}" y2="{yb}" stroke="#333"/>
<text x="{cx}" y="{xl}" text-anchor="middle">events per second asked</text>
<text transform="translate(18 {cy}) rotate(-90)" text-anchor="middle">{ql} latency, ms</text>
<line class="objective" x1="{L}" x2="{xr}" y1="{oy:.1}" y2="{oy:.1}" stroke="#b00020" stroke-width="1.5" stroke-dasharray="6 3"/><text x="{ox}" y="{oty:.1}" fill="#b00020">{ol}</text>"##,
        yb = H - B,
        xr = W - R,
        cx = (L + W - R) / 2.0,
        xl = H - 12.0,
        cy = (T + H - B) / 2.0,
        ql = q.label(),
        oy = y(objective.ms),
        ox = W - R + 4.0,
        oty = y(objective.ms) + 4.0,
        ol = esc(slo)
    );
    for (k, c) in caps.iter().enumerate() {
        let col = PALETTE[k % PALETTE.len()];
        if let Some([a, b]) = c.ci95 {
            let _ = writeln!(
                s,
                r##"<rect class="capacity-ci" x="{xa:.1}" y="{T}" width="{w:.1}" height="{h}" fill="{col}" fill-opacity="0.12"/>"##,
                xa = x(a),
                w = (x(b) - x(a)).max(1.0),
                h = H - T - B
            );
        }
        if let Some(rate) = c.rate {
            let _ = writeln!(
                s,
                r##"<line class="capacity" x1="{xv:.1}" x2="{xv:.1}" y1="{T}" y2="{yb}" stroke="{col}" stroke-width="2"/>"##,
                xv = x(rate),
                yb = H - B
            );
        }
        let ly = T + 10.0 + 20.0 * k as f64;
        let lx = W - R + 14.0;
        let label = match c.rate {
            Some(rate) => format!("{} {}", c.variant, per_second(rate)),
            None => format!("{} (none)", c.variant),
        };
        let _ = writeln!(
            s,
            r##"<rect x="{lx}" y="{ry}" width="14" height="10" fill="{col}"/><text x="{tx}" y="{ly}">{n}</text>"##,
            ry = ly - 9.0,
            tx = lx + 20.0,
            n = esc(&label)
        );
    }
    for (k, rate, v, measured) in pts {
        let col = PALETTE[k % PALETTE.len()];
        let fill = if measured { col } else { "none" };
        let _ = writeln!(
            s,
            r##"<circle cx="{cx:.1}" cy="{cy:.1}" r="3" fill="{fill}" stroke="{col}"/>"##,
            cx = x(rate),
            cy = y(v)
        );
    }
    s += "</svg>\n";
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_as_people_write_them() {
        assert_eq!(per_second(41_200.4), "41,200/s");
        assert_eq!(per_second(999.6), "1,000/s");
        assert_eq!(per_second(35.0), "35/s");
        assert_eq!(per_second(1_234_567.0), "1,234,567/s");
    }
}
