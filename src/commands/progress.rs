//! The live display: an indicatif bar on stderr, fed by the trial coordinator's samples
//! (never by the workers). Hidden automatically when stderr is not a terminal.

use crate::load::TrialProgress;
use indicatif::{ProgressBar, ProgressStyle};
use std::time::Duration;

/// A bar for one `dbtax bench` trial.
pub fn trial_bar(quiet: bool) -> ProgressBar {
    let bar = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(1000)
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg:40} [{bar:30}] {elapsed_precise}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// Show one sample on a trial bar.
pub fn show_trial(bar: &ProgressBar, p: &TrialProgress) {
    let frac = match p.quota_done {
        Some(f) => f,
        None if p.planned.is_zero() => 1.0,
        None => (p.elapsed.as_secs_f64() / p.planned.as_secs_f64()).min(1.0),
    };
    bar.set_position((frac * 1000.0) as u64);
    let phase = if p.measuring {
        "measuring"
    } else {
        "warming up"
    };
    bar.set_message(format!("{phase}: {:>10.0} events/s", p.events_per_s));
}
