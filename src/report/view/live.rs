//! A live run (`dbtax live`) as it is shown: per feature the server CPU per statement added,
//! the latency added, the log per statement and the bill at production's rate, each with its
//! interval; the pairs set aside; the guard that ended it; what watching cost. The terminal's
//! table, the page's view ([`LiveView`]: its words, tables and timeline) and the CSV of the
//! windows.

use super::View;
use crate::report::page::charts::Chart;
use crate::report::page::svg::{BOTTOM, H, LEFT, PALETTE, RIGHT, TOP, W, esc, nice_ticks};
use crate::results::live::{Interval, LiveEstimate, LiveResults, Window};
use std::fmt::Write;

fn interval(i: Option<Interval>, unit: &'static str, digits: usize) -> String {
    i.map_or("-".into(), |i| {
        crate::report::interval::Interval::of(i.value, i.ci95, unit, digits).to_string()
    })
}

/// The CPU figure's verdict in words, with the minimum detectable effect where it matters
/// ("" when no verdict was given).
pub fn verdict_words(e: &LiveEstimate) -> String {
    use crate::results::Verdict;
    let Some(v) = e.verdict else {
        return String::new();
    };
    let at_most = e.cpu_pct.map_or(0.0, |i| i.ci95.1.max(0.0));
    match v {
        Verdict::Cost => "a cost, measured".into(),
        Verdict::Gain => "a gain, measured".into(),
        Verdict::Likely => {
            "likely, not counted (clear of zero, but not once adjusted for every feature)".into()
        }
        Verdict::Negligible => "negligible".into(),
        Verdict::AtMost => format!(
            "at most {at_most:.1}% (these pairs detect {:.1}% 80% of the time)",
            e.mde_pct.unwrap_or(f64::NAN)
        ),
        Verdict::Unstable => format!(
            "unstable here: these pairs could detect only {:.1}% 80% of the time (more \
             windows, or longer ones)",
            e.mde_pct.unwrap_or(f64::NAN)
        ),
    }
}

/// What a live run found, as the terminal shows it.
pub fn table(l: &LiveResults) -> String {
    let per = if l.work == "transactions" {
        "transaction"
    } else {
        "statement"
    };
    let mut t = format!(
        "{} windows measured; production ran {} {}s/s in the off windows\n",
        l.windows.len(),
        l.estimates.first().map_or(0.0, |e| e.rate).round(),
        per
    );
    for e in &l.estimates {
        let name = &l.features[e.feature];
        t += &format!("{name}:\n");
        t += &format!(
            "  server CPU per {per} added  {}  ({} of the off windows')\n",
            if l.cpu_read {
                interval(e.cpu_us_per_statement, " µs", 2)
            } else {
                "not read (the server runs elsewhere: --server-host)".into()
            },
            interval(e.cpu_pct, "%", 1)
        );
        let v = verdict_words(e);
        if !v.is_empty() {
            t += &format!("  verdict                     {v}\n");
        }
        t += &format!(
            "  log per {per}               {}\n",
            interval(e.log_bytes_per_statement, " B", 0)
        );
        t += &format!(
            "  latency per statement added {}\n",
            if l.shapes_read {
                format!(
                    "{} (the {} busiest shapes, weighed by the off windows' mix; {})",
                    interval(e.latency_us, " µs", 2),
                    l.shapes,
                    if l.work == "transactions" {
                        format!("{:.1} of their statements per transaction", l.shapes_share)
                    } else {
                        format!("{:.0}% of the statements", 100.0 * l.shapes_share)
                    }
                )
            } else {
                format!("not read ({})", l.shapes_source)
            }
        );
        t += &format!(
            "  the bill at this rate       {} cores, {} GB of log a day\n",
            interval(e.cores, "", 4),
            interval(e.log_gb_per_day, "", 2)
        );
        t += &format!("  pairs used                  {}\n", e.pairs);
        for s in &e.set_aside {
            t += &format!("  pair {} set aside: {}\n", s.pair, s.why);
        }
        if e.cpu_us_per_statement.is_none() && l.cpu_read {
            t += "  too few pairs for an interval (3 at least)\n";
        }
    }
    match &l.guard_tripped {
        Some(g) => t += &format!("guard tripped: {g}\n"),
        None => t += "guards: none tripped\n",
    }
    let seconds = l.window_start_s.last().copied().unwrap_or(1.0).max(1.0);
    let reads = (l.polls + l.shape_reads) as f64;
    t += &match l.poll_server_us {
        Some(us) => format!(
            "watching cost: {} polls and {} reads of the shapes' table, {us:.0} µs of the \
             server's CPU each, {:.3}% of a core\n",
            l.polls,
            l.shape_reads,
            100.0 * reads * us / 1e6 / seconds
        ),
        None => format!(
            "watching cost: {} polls of {:.0} µs each at most (their round trip) and {} reads \
             of the shapes' table of {:.1} ms, {:.3}% of a core at most\n",
            l.polls,
            l.poll_us,
            l.shape_reads,
            l.shape_read_ms,
            100.0 * (l.polls as f64 * l.poll_us + l.shape_reads as f64 * l.shape_read_ms * 1e3)
                / 1e6
                / seconds
        ),
    };
    if l.shape_reads > 0 && l.work == "transactions" {
        t += &format!(
            "  each read of pg_stat_statements held its lock in share mode for up to {:.1} ms \
             (a statement of a shape not yet in the table waits that long to enter it)\n",
            l.shape_read_ms
        );
    }
    for n in &l.notes {
        t += &format!("note: {n}\n");
    }
    t
}

/// A live run's view: the page and the words ask it, as they ask a lab run's.
pub struct LiveView<'a>(pub &'a LiveResults);

impl View for LiveView<'_> {
    fn headlines(&self) -> Vec<String> {
        headlines(self.0)
    }

    fn method(&self) -> Option<String> {
        Some(
            "Production's own traffic was the workload: the feature was switched on and off in \
             windows, an off and an on window side by side in a random order, and each pair's \
             difference taken (the windows' difference in rate, and in mix where the server \
             sums its statements per shape, as covariates). Intervals are 95% over the pairs; \
             a pair whose windows' traffic differs too much is set aside and said."
                .into(),
        )
    }

    fn table(&self, _width: usize) -> String {
        table(self.0)
    }

    fn html(&self) -> String {
        let l = self.0;
        let per = per(l);
        let mut s = String::from("<h2>Results</h2>\n<table><tr><th>feature</th>");
        for h in [
            format!("server CPU per {per} added"),
            "% of the off windows'".into(),
            "latency per statement added".into(),
            format!("log per {per}"),
            "cores at this rate".into(),
            "GB of log a day".into(),
            "pairs".into(),
        ] {
            let _ = write!(s, "<th>{}</th>", esc(&h));
        }
        s += "</tr>\n";
        for e in &l.estimates {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&l.features[e.feature]),
                esc(&interval(e.cpu_us_per_statement, " µs", 2)),
                esc(&interval(e.cpu_pct, "%", 1)),
                esc(&interval(e.latency_us, " µs", 2)),
                esc(&interval(e.log_bytes_per_statement, " B", 0)),
                esc(&interval(e.cores, "", 4)),
                esc(&interval(e.log_gb_per_day, "", 2)),
                e.pairs
            );
        }
        s += "</table>\n";
        if let Some(g) = &l.guard_tripped {
            let _ = writeln!(s, "<p class=\"warn\">Guard tripped: {}</p>", esc(g));
        }
        for e in &l.estimates {
            for a in &e.set_aside {
                let _ = writeln!(
                    s,
                    "<p>{}: pair {} set aside: {}</p>",
                    esc(&l.features[e.feature]),
                    a.pair,
                    esc(&a.why)
                );
            }
        }
        for n in &l.notes {
            let _ = writeln!(s, "<p class=\"noise\">{}</p>", esc(n));
        }
        s
    }

    fn charts(&self) -> Vec<Chart> {
        let l = self.0;
        let per = per(l);
        vec![
            Chart {
                name: "timeline",
                svg: timeline(
                    l,
                    &format!("Production's {per}s per second, window by window"),
                    &format!("{per}s/s"),
                    |w| w.statements / w.seconds.max(1e-9),
                ),
            },
            Chart {
                name: "cpu-timeline",
                svg: timeline(
                    l,
                    &format!("Server CPU per {per}, window by window"),
                    &format!("µs per {per}"),
                    |w| 1e6 * w.cpu_s / w.statements.max(1.0),
                ),
            },
        ]
    }
}

fn per(l: &LiveResults) -> &'static str {
    if l.work == "transactions" {
        "transaction"
    } else {
        "statement"
    }
}

/// One sentence per feature, and the guard that ended the run.
fn headlines(l: &LiveResults) -> Vec<String> {
    let per = per(l);
    let mut out: Vec<String> = l
        .estimates
        .iter()
        .map(|e| {
            let name = &l.features[e.feature];
            let mut h = format!(
                "{name} on production's own traffic ({:.0} {per}s/s in the off windows, {} \
                 pairs): ",
                e.rate, e.pairs
            );
            match (l.cpu_read, e.cpu_us_per_statement) {
                (true, Some(i)) => {
                    h += &format!(
                        "{} of server CPU per {per} ({} of the off windows', {}; {} cores at \
                         this rate)",
                        interval(Some(i), " µs", 2),
                        interval(e.cpu_pct, "%", 1),
                        verdict_words(e),
                        interval(e.cores, "", 4)
                    );
                }
                (true, None) => h += "too few pairs for an interval of the server CPU",
                (false, _) => h += "the server's CPU was not read (it runs elsewhere)",
            }
            if let Some(i) = e.latency_us {
                h += &format!(", {} of latency per statement", interval(Some(i), " µs", 2));
            }
            if let Some(i) = e.log_bytes_per_statement
                && i.value.abs() >= 0.5
            {
                h += &format!(
                    ", {} of log per {per} ({} GB a day)",
                    interval(Some(i), " B", 0),
                    interval(e.log_gb_per_day, "", 2)
                );
            }
            h + "."
        })
        .collect();
    if let Some(g) = &l.guard_tripped {
        out.push(format!("The run ended early: {g}."));
    }
    out
}

/// A timeline of one figure per window: each window a band shaded by its variant (off
/// white, each feature its colour), the figure a point at the window's middle joined by a
/// line; a guard that tripped marked after the last window.
fn timeline(l: &LiveResults, title: &str, y_label: &str, value: impl Fn(&Window) -> f64) -> String {
    let starts = &l.window_start_s;
    let end_of = |i: usize| -> f64 {
        starts.get(i).copied().unwrap_or(0.0) + l.windows.get(i).map_or(0.0, |w| w.seconds)
    };
    let t1 = (0..l.windows.len()).map(end_of).fold(1.0_f64, f64::max);
    let vals: Vec<f64> = l.windows.iter().map(&value).collect();
    let hi = vals.iter().copied().fold(0.0_f64, f64::max);
    let ticks = nice_ticks(0.0, hi.max(1e-9), 5);
    let y1 = *ticks.last().unwrap_or(&1.0);
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let x = |t: f64| LEFT + pw * t / t1;
    let y = |v: f64| TOP + ph * (1.0 - v / y1.max(1e-12));
    let mut s = String::new();
    let _ = writeln!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12"><title>{t}</title><rect width="{W}" height="{H}" fill="white"/><text x="{cx:.1}" y="22" text-anchor="middle" font-size="14">{t}</text>"##,
        t = esc(title),
        cx = W / 2.0
    );
    for (i, w) in l.windows.iter().enumerate() {
        let feature = l.slots.get(w.slot).and_then(|s| s.feature);
        if let Some(f) = feature {
            let (a, b) = (x(starts.get(i).copied().unwrap_or(0.0)), x(end_of(i)));
            let _ = writeln!(
                s,
                r##"<rect class="on" x="{a:.1}" y="{TOP}" width="{:.1}" height="{ph:.1}" fill="{}" fill-opacity="0.15"><title>{} on</title></rect>"##,
                (b - a).max(0.5),
                PALETTE[(f + 1) % PALETTE.len()],
                esc(&l.features[f])
            );
        }
    }
    for v in &ticks {
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}" stroke="#e5e5e5"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            y(*v) + 4.0,
            fmt_value(*v),
            yy = y(*v)
        );
    }
    for t in nice_ticks(0.0, t1, 6)
        .into_iter()
        .filter(|t| *t <= t1 + 1e-9)
    {
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            x(t),
            TOP + ph + 16.0,
            fmt_value(t)
        );
    }
    let _ = writeln!(
        s,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle">seconds from the start</text><text transform="translate(16,{:.1}) rotate(-90)" text-anchor="middle">{}</text>"##,
        LEFT + pw / 2.0,
        H - 12.0,
        TOP + ph / 2.0,
        esc(y_label)
    );
    let pts: Vec<String> = vals
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let mid = (starts.get(i).copied().unwrap_or(0.0) + end_of(i)) / 2.0;
            format!("{:.1},{:.1}", x(mid), y(*v))
        })
        .collect();
    if pts.len() > 1 {
        let _ = writeln!(
            s,
            r##"<polyline class="series" fill="none" stroke="{}" stroke-width="2" points="{}"/>"##,
            PALETTE[0],
            pts.join(" ")
        );
    }
    for p in &pts {
        let (cx, cy) = p.split_once(',').unwrap_or(("0", "0"));
        let _ = writeln!(
            s,
            r##"<circle class="point" cx="{cx}" cy="{cy}" r="3" fill="{}"/>"##,
            PALETTE[0]
        );
    }
    if l.guard_tripped.is_some() {
        let gx = x(t1);
        let _ = writeln!(
            s,
            r##"<line class="guard" x1="{gx:.1}" x2="{gx:.1}" y1="{TOP}" y2="{:.1}" stroke="{}" stroke-width="2" stroke-dasharray="4 3"/><text x="{:.1}" y="{:.1}" fill="{}">guard tripped</text>"##,
            TOP + ph,
            PALETTE[2],
            gx + 4.0,
            TOP + 12.0,
            PALETTE[2]
        );
    }
    // The legend: off, then each feature's shade.
    let lx = LEFT + pw + 14.0;
    let _ = writeln!(
        s,
        r##"<rect x="{lx:.1}" y="{:.1}" width="12" height="12" fill="white" stroke="#999"/><text x="{:.1}" y="{:.1}">off</text>"##,
        TOP,
        lx + 18.0,
        TOP + 10.0
    );
    for (f, name) in l.features.iter().enumerate() {
        let yy = TOP + 18.0 * (f as f64 + 1.0);
        let _ = writeln!(
            s,
            r##"<rect x="{lx:.1}" y="{yy:.1}" width="12" height="12" fill="{}" fill-opacity="0.3"/><text x="{:.1}" y="{:.1}">{} on</text>"##,
            PALETTE[(f + 1) % PALETTE.len()],
            lx + 18.0,
            yy + 10.0,
            esc(name)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// A value on an axis: no more decimals than it needs.
fn fmt_value(v: f64) -> String {
    if v.abs() >= 100.0 || v == v.round() {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// The CSV's header for a live run: one row per window.
pub const CSV_COLUMNS: [&str; 13] = [
    "window",
    "start_s",
    "variant",
    "pair",
    "seconds",
    "work",
    "work_per_s",
    "server_cpu_us_per_work",
    "log_bytes",
    "errors",
    "running",
    "shape_calls",
    "shape_mean_us",
];

/// One row per window measured.
pub fn csv(l: &LiveResults) -> String {
    let mut out = CSV_COLUMNS.join(",") + "\n";
    for (i, w) in l.windows.iter().enumerate() {
        let slot = l.slots.get(w.slot);
        let variant = match slot.and_then(|s| s.feature) {
            Some(f) => l.features.get(f).cloned().unwrap_or_default(),
            None => "off".into(),
        };
        let calls: f64 = w.shapes.iter().sum();
        let time: f64 = w.shape_time_us.iter().sum();
        let _ = writeln!(
            out,
            "{},{:.3},{},{},{:.3},{:.0},{:.2},{},{:.0},{},{:.2},{},{}",
            i + 1,
            l.window_start_s.get(i).copied().unwrap_or(0.0),
            variant,
            slot.and_then(|s| s.pair)
                .map_or(String::new(), |p| p.to_string()),
            w.seconds,
            w.statements,
            w.statements / w.seconds.max(1e-9),
            if l.cpu_read {
                format!("{:.3}", 1e6 * w.cpu_s / w.statements.max(1.0))
            } else {
                String::new()
            },
            w.log_bytes,
            w.errors.map_or(String::new(), |e| format!("{e:.0}")),
            w.running,
            if w.shapes.is_empty() {
                String::new()
            } else {
                format!("{calls:.0}")
            },
            if w.shapes.is_empty() {
                String::new()
            } else {
                format!("{:.3}", time / calls.max(1.0))
            },
        );
    }
    out
}
