//! What the report says about the experiment as a whole: interactions between factors and
//! the carry-over the overheads were corrected for, in words, table lines and HTML.

use super::interval::Interval;
use super::words::{phrase, plural};
use crate::results::{Interaction, Results};

/// An interaction's interval in points, e.g. "+8.1 points [+2.0, +14.3]".
fn points(i: &Interaction) -> String {
    format!(
        "{:+.1} points [{:+.1}, {:+.1}]",
        i.pct, i.ci95_pct[0], i.ci95_pct[1]
    )
}

/// One sentence: "the audit plugin costs 8.1 points more with sync1-trx1 than with
/// sync0-trx0 at 16 threads [2.0, 14.3]", or "no interaction measured".
pub fn sentence(r: &Results, i: &Interaction) -> String {
    let who = phrase(r, &i.levels[0], None);
    let at = format!("at {} {}", i.threads, plural(i.threads));
    if i.significant {
        let (more, size, lo, hi) = if i.pct >= 0.0 {
            ("more", i.pct, i.ci95_pct[0], i.ci95_pct[1])
        } else {
            ("less", -i.pct, -i.ci95_pct[1], -i.ci95_pct[0])
        };
        format!(
            "{who} costs {size:.1} points {more} with {} than with {} {at} [{lo:.1}, {hi:.1}]",
            i.levels[1], i.against
        )
    } else {
        format!(
            "no interaction measured between {who} and {} (against {}) {at}: {}, not \
             significant once adjusted for the {} tests of this experiment",
            i.levels[1],
            i.against,
            points(i),
            r.analysis.intervals
        )
    }
}

/// The sentences about the headline's thread count.
pub fn headlines(r: &Results) -> Vec<String> {
    r.analysis
        .interactions
        .iter()
        .filter(|i| i.threads == r.headline_threads)
        .map(|i| super::words::capitalize(&sentence(r, i)) + ".")
        .collect()
}

/// The table's lines for one thread count.
pub fn table_lines(r: &Results, threads: u32) -> String {
    let mut s = String::new();
    for i in r
        .analysis
        .interactions
        .iter()
        .filter(|i| i.threads == threads)
    {
        let sig = if i.significant { "" } else { " (within noise)" };
        s += &format!(
            "  interaction: {} with {} instead of {}: {}{sig}\n",
            i.levels[0],
            i.levels[1],
            i.against,
            points(i)
        );
    }
    s
}

/// The carry-over the overheads were corrected for, one line.
pub fn carry_over_line(r: &Results) -> Option<String> {
    if r.analysis.carry_over.is_empty() {
        return None;
    }
    let terms: Vec<String> = r
        .analysis
        .carry_over
        .iter()
        .map(|c| {
            let e = crate::results::Estimate {
                value: c.pct,
                ci95: c.ci95_pct,
            };
            let when = if c.lag == 1 {
                format!("after {}", c.after)
            } else {
                format!("two after {}", c.after)
            };
            format!("{when} {}", Interval::estimate(&e))
        })
        .collect();
    let mut s = format!(
        "Carry-over (slower than after the baseline): {}; the overheads are corrected for it.",
        terms.join(", ")
    );
    for n in &r.analysis.carry_over_notes {
        s += &format!(" Note: {n}.");
    }
    Some(s)
}

/// The HTML report's interactions table (empty when there are none).
pub fn html(r: &Results) -> String {
    if r.analysis.interactions.is_empty() {
        return String::new();
    }
    let esc = super::page::svg::esc;
    let mut s = String::from(
        "<h3>Interactions</h3>\n<p>How much one factor's cost changes with another factor's level, in percentage points, paired within blocks (t interval, in the same Holm family as the overheads).</p>\n<table><tr><th>threads</th><th>factor</th><th>at</th><th>instead of</th><th>change in cost [95% CI]</th><th>blocks</th></tr>\n",
    );
    for i in &r.analysis.interactions {
        let class = if i.significant { "sig" } else { "noise" };
        s += &format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{class}\">{}</td><td>{}</td></tr>\n",
            i.threads,
            esc(&i.levels[0]),
            esc(&i.levels[1]),
            esc(&i.against),
            esc(&points(i)),
            i.blocks
        );
    }
    s + "</table>\n"
}
