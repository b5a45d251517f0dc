//! A replay's cost per statement: for each variant, the fingerprints whose statements paid
//! the most of the latency it added, with the added latency per statement (paired over
//! blocks) and their share of all it added.

use super::page::svg::esc;
use crate::results::{Cell, FingerprintCost, Results};
use crate::units::plural;
use std::fmt::Write;

/// How many fingerprints a report lists per cell.
const TOP: usize = 5;

/// The cells that have costs per statement (the variants, not the baseline).
fn cells(r: &Results) -> impl Iterator<Item = &Cell> {
    r.cells.iter().filter(|c| {
        c.fingerprints.iter().any(|f| {
            f.added_share_pct.is_some() || f.latency_delta_ms.is_some() || f.diverged.is_some()
        })
    })
}

/// The fingerprints a cell's table lists: the costliest, and every one whose replay diverged
/// (whatever its cost: a reader must see where the replay was not faithful).
fn listed(c: &Cell) -> impl Iterator<Item = &FingerprintCost> {
    c.fingerprints.iter().enumerate().filter_map(|(i, f)| {
        (f.diverged.is_some() || (i < TOP && f.latency_delta_ms.is_some())).then_some(f)
    })
}

/// The mark of a fingerprint whose replay diverged, before its statement.
fn mark(f: &FingerprintCost) -> String {
    match &f.diverged {
        Some(why) => format!("[diverged: {why}] "),
        None => String::new(),
    }
}

fn us(v: f64) -> String {
    format!("{:+.1}", v * 1000.0)
}

fn one_line(s: &str, n: usize) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > n {
        flat.chars().take(n - 1).collect::<String>() + "…"
    } else {
        flat
    }
}

/// "general-log's added latency is 85% in these 3 statements".
fn headline(c: &Cell) -> Option<String> {
    let top: Vec<&FingerprintCost> = c.fingerprints.iter().take(3).collect();
    let share: f64 = top.iter().filter_map(|f| f.added_share_pct).sum();
    (share > 0.0).then(|| {
        format!(
            "{}'s added latency at {} threads is {share:.0}% in {}",
            c.variant,
            c.threads,
            if top.len() == 1 {
                "this statement".to_string()
            } else {
                format!("these {} statements", top.len())
            }
        )
    })
}

/// "The replay was not faithful for 2 kinds of statement …", when it was not.
fn diverged_line(c: &Cell) -> Option<String> {
    let n = c
        .fingerprints
        .iter()
        .filter(|f| f.diverged.is_some())
        .count();
    (n > 0).then(|| {
        format!(
            "The replay was not faithful for {n} kind{} of statement (they failed, or sent \
             other rows than the log recorded, here or in the baseline, marked \"diverged\"): \
             what they add is not what they cost.",
            if n == 1 { "" } else { "s" }
        )
    })
}

/// What the replay read: "Replayed 1200 statements of 3 sessions from slow.log (slow); left
/// out: …".
fn read_line(r: &Results) -> Option<String> {
    let replay = r.workload.get("replay")?;
    let read = replay.get("read")?;
    let n = |k: &str| read.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
    let mut s = format!(
        "Replayed {} of {} from {} ({}, {} pace); left out: {} that change data or schema{}, \
         {} that change the server",
        plural(n("statements"), "statement"),
        plural(n("sessions"), "session"),
        replay.get("log").and_then(|v| v.as_str()).unwrap_or("?"),
        read.get("format").and_then(|v| v.as_str()).unwrap_or("?"),
        replay.get("pace").and_then(|v| v.as_str()).unwrap_or("?"),
        n("skipped_writes"),
        if replay.get("writes").and_then(|v| v.as_bool()) == Some(true) {
            " (none: --replay-writes)"
        } else {
            ""
        },
        n("skipped_server"),
    );
    if n("prepared") > 0 {
        s += &format!(
            "; {} {} executions of {}, replayed prepared",
            n("prepared"),
            if n("prepared") == 1 { "was" } else { "were" },
            plural(n("prepared_statements"), "prepared statement")
        );
    }
    if n("sessions_left_out") > 0 {
        s += &format!(", {} sessions past --sessions", n("sessions_left_out"));
    }
    if n("malformed_lines") > 0 {
        s += &format!("; {} malformed lines skipped", n("malformed_lines"));
        if let Some(first) = read.get("malformed").and_then(|m| m.get(0)) {
            s += &format!(
                " (the first, line {}: {})",
                first[0],
                first[1].as_str().unwrap_or("")
            );
        }
    }
    Some(s + ".")
}

/// The terminal's section ("" when the run is no replay).
pub fn text(r: &Results) -> String {
    let mut s = String::new();
    if let Some(line) = read_line(r) {
        let _ = writeln!(s, "\n{line}");
    }
    for c in cells(r) {
        let _ = writeln!(
            s,
            "\nThe statements that pay for {} ({} threads): latency added per statement, µs, \
             paired over blocks",
            c.variant, c.threads
        );
        if let Some(h) = headline(c) {
            let _ = writeln!(s, "  {h}");
        }
        if let Some(d) = diverged_line(c) {
            let _ = writeln!(s, "  {d}");
        }
        let _ = writeln!(
            s,
            "  {:>6} {:>26} {:>9} {:>9}  statement",
            "share", "p50 added [95% CI]", "p99 added", "count"
        );
        for f in listed(c) {
            let (p50, p99) = match &f.latency_delta_ms {
                Some(d) => (
                    format!(
                        "{} [{}, {}]",
                        us(d.p50.value),
                        us(d.p50.ci95[0]),
                        us(d.p50.ci95[1])
                    ),
                    us(d.p99.value),
                ),
                None => ("-".into(), "-".into()),
            };
            let _ = writeln!(
                s,
                "  {:>5.0}% {:>26} {:>9} {:>9}  {}{}",
                f.added_share_pct.unwrap_or(0.0),
                p50,
                p99,
                f.count,
                mark(f),
                one_line(&f.sample, 70)
            );
        }
    }
    s
}

/// The HTML report's section ("" when the run is no replay).
pub fn html(r: &Results) -> String {
    let mut s = String::new();
    if let Some(line) = read_line(r) {
        let _ = writeln!(s, "<p>{}</p>", esc(&line));
    }
    for c in cells(r) {
        let _ = writeln!(
            s,
            "<h3>The statements that pay for {} ({} threads)</h3>",
            esc(&c.variant),
            c.threads
        );
        if let Some(h) = headline(c) {
            let _ = writeln!(s, "<p>{}</p>", esc(&h));
        }
        if let Some(d) = diverged_line(c) {
            let _ = writeln!(s, "<p><strong>{}</strong></p>", esc(&d));
        }
        s += "<table><tr><th>share of added latency</th><th>p50 added µs [95% CI]</th><th>p99 added µs [95% CI]</th><th>statements per trial</th><th>statement</th></tr>\n";
        for f in listed(c) {
            let ci = |e: &crate::results::Estimate| {
                format!("{} [{}, {}]", us(e.value), us(e.ci95[0]), us(e.ci95[1]))
            };
            let (p50, p99) = match &f.latency_delta_ms {
                Some(d) => (ci(&d.p50), ci(&d.p99)),
                None => ("–".into(), "–".into()),
            };
            let diverged = match &f.diverged {
                Some(why) => format!("<strong>diverged</strong>: {} ", esc(why)),
                None => String::new(),
            };
            let _ = writeln!(
                s,
                "<tr><td>{:.0}%</td><td>{}</td><td>{}</td><td>{}</td><td>{diverged}<code>{}</code></td></tr>",
                f.added_share_pct.unwrap_or(0.0),
                p50,
                p99,
                f.count,
                esc(&one_line(&f.sample, 200))
            );
        }
        s += "</table>\n";
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diverged_fingerprint_is_marked_in_the_words_the_table_and_the_html() {
        let paid = FingerprintCost {
            digest: "a".into(),
            sample: "SELECT a FROM t WHERE id = 1".into(),
            count: 900,
            latency_delta_ms: Some(Default::default()),
            added_share_pct: Some(100.0),
            ..Default::default()
        };
        // Every statement of it failed: untimed, no added latency, listed anyway.
        let failed = FingerprintCost {
            digest: "b".into(),
            sample: "SELECT * FROM gone".into(),
            errors: 40,
            diverged: Some("40 of its statements failed per trial here, 0 in the baseline".into()),
            ..Default::default()
        };
        let r = Results {
            cells: vec![Cell {
                variant: "general-log".into(),
                threads: 4,
                fingerprints: vec![paid, failed],
                ..Default::default()
            }],
            ..Default::default()
        };
        let t = text(&r);
        assert!(t.contains("not faithful for 1 kind of statement"), "{t}");
        assert!(
            t.contains("[diverged: 40 of its statements failed per trial here")
                && t.contains("SELECT * FROM gone"),
            "{t}"
        );
        let h = html(&r);
        assert!(h.contains("<strong>diverged</strong>: 40 of its"), "{h}");
    }
}
