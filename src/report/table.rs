//! The terminal table: the run, its view's sections (`closed`: one per thread count; `rate`:
//! one per load point), the words, and what the reader must know.

use super::view::View;
use crate::results::Results;

/// Render the results as a plain-text table, as the run's view shows them.
pub fn render(r: &Results, view: &dyn View) -> String {
    let mut s = format!(
        "\n{} — {} on {} ({}){}\n",
        r.name,
        super::workload_title(r),
        r.target.url,
        r.target.server_version,
        if r.complete { "" } else { " — INCOMPLETE" }
    );
    let width = r
        .variants
        .iter()
        .map(|v| v.name.len())
        .max()
        .unwrap_or(7)
        .max(7);
    if let Some(n) = r.queries_per_trial {
        s += &format!("\nEach trial ran {n} statements; 'time s' is its total time (median).\n");
    }
    s += &view.table(width);
    let words = super::words::headlines(r, view);
    if !words.is_empty() {
        s += "\n";
        for h in words {
            s += &format!("{h}\n");
        }
    }
    s += &super::statements::text(r);
    if let Some(m) = view.method() {
        s += &format!("\n{m}\n");
    }
    if let Some(c) = super::analysis::carry_over_line(r) {
        s += &format!("{c}\n");
    }
    if let Some(a) = super::agents::summary(r) {
        s += &format!("\n{a}");
    }
    for w in &r.warnings {
        s += &format!("\nwarning: {w}\n");
    }
    s
}
