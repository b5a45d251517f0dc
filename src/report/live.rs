//! A live run (`dbtax live`) as the terminal shows it: per feature the server CPU per
//! statement added, the log per statement and the bill at production's rate, each with its
//! interval; the pairs set aside; the guard that ended it; what watching cost.

use crate::results::live::{Interval, LiveResults};

fn interval(i: Option<Interval>, unit: &str, digits: usize) -> String {
    match i {
        Some(i) => format!(
            "{:+.d$}{unit} [{:+.d$}, {:+.d$}]",
            i.value,
            i.ci95.0,
            i.ci95.1,
            d = digits
        ),
        None => "-".into(),
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
        t += &format!(
            "  log per {per}               {}\n",
            interval(e.log_bytes_per_statement, " B", 0)
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
    t += &format!(
        "watching cost: {} polls of {:.0} µs each at most (their round trip), {:.3}% of a core\n",
        l.polls,
        l.poll_us,
        100.0 * l.polls as f64 * l.poll_us
            / 1e6
            / l.window_start_s.last().copied().unwrap_or(1.0).max(1.0)
    );
    for n in &l.notes {
        t += &format!("note: {n}\n");
    }
    t
}
