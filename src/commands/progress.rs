//! The live displays, fed by samples (never by the workers): an indicatif bar on stderr for a
//! `dbtax bench` trial, and `RunDisplay`, the runner's observer for `run` and `demo`: a bar on
//! a terminal, one plain line per block otherwise (CI logs, `make demo | tee demo.log`).

use crate::load::TrialProgress;
use crate::report::interval::Interval;
use dbtax_stats::run::{BlockDone, Observer};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

/// A bar for one `dbtax bench` trial.
pub fn trial_bar(quiet: bool) -> ProgressBar {
    let bar = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(1000)
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg:50} [{bar:30}] {elapsed_precise}")
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
    bar.set_message(format!("{phase}: {}", rate_line(p)));
}

/// "12000 events/s" in closed loop; "1998 of 2000 events/s, lag 0.1 ms" at a rate.
pub fn rate_line(p: &TrialProgress) -> String {
    match (p.asked_per_s, p.lag_ms) {
        (Some(asked), Some(lag)) => format!(
            "{:.0} of {asked:.0} events/s, lag {lag:.1} ms",
            p.events_per_s
        ),
        _ => format!("{:>10.0} events/s", p.events_per_s),
    }
}

/// How a run shows its progress.
enum Mode {
    /// `--json`: nothing on stderr but errors.
    Quiet,
    /// A terminal: a bar with the current trial.
    Bar(ProgressBar),
    /// No terminal: one line per block.
    Lines,
}

/// The runner's progress, for people.
pub struct RunDisplay {
    mode: Mode,
    trial: String,
}

impl RunDisplay {
    /// A bar on a terminal, plain lines otherwise, nothing when `quiet`.
    pub fn new(quiet: bool) -> RunDisplay {
        let mode = if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(1);
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] [{bar:25}] {pos}/{len} trials, ETA {eta}  {msg}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            Mode::Bar(bar)
        } else {
            Mode::Lines
        };
        RunDisplay {
            mode,
            trial: String::new(),
        }
    }

    /// Clear the bar (before the table is printed).
    pub fn finish(&self) {
        if let Mode::Bar(bar) = &self.mode {
            bar.finish_and_clear();
        }
    }
}

fn mmss(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}m{:02}s", s / 60, s % 60)
}

/// The plain line for a finished block: progress, time, and the block's intervals.
pub fn block_line(b: &BlockDone<'_>) -> String {
    let done = b.trials_done.max(1);
    let eta = b
        .elapsed
        .mul_f64(b.trials_planned.saturating_sub(done) as f64 / done as f64);
    let intervals: Vec<String> = b
        .cells
        .iter()
        .filter(|c| c.threads == b.threads)
        .filter_map(|c| {
            let o = c.overhead.as_ref()?;
            Some(format!("{} {}", c.variant, Interval::overhead(o)))
        })
        .collect();
    let mut line = format!(
        "[{}/{} trials] {} elapsed, ETA {}",
        b.trials_done,
        b.trials_planned,
        mmss(b.elapsed),
        mmss(eta)
    );
    if !intervals.is_empty() {
        let unit = if b.threads == 1 { "thread" } else { "threads" };
        line += &format!(" | {} {unit}: {}", b.threads, intervals.join(", "));
    }
    line
}

impl Observer for RunDisplay {
    fn trial_starting(&mut self, index: usize, planned: usize, variant: &str, threads: u32) {
        self.trial = format!("{variant} @ {threads} threads");
        if let Mode::Bar(bar) = &self.mode {
            bar.set_length(planned as u64);
            bar.set_position(index as u64);
            bar.set_message(self.trial.clone());
        }
    }

    fn trial_progress(&mut self, p: &TrialProgress) {
        if let Mode::Bar(bar) = &self.mode {
            let phase = if p.measuring { "measuring" } else { "settling" };
            bar.set_message(format!("{} | {phase} {}", self.trial, rate_line(p).trim()));
        }
    }

    fn status(&mut self, message: &str) {
        match &self.mode {
            Mode::Quiet => {}
            // Before the first trial: lines above the bar; during the run: its message.
            Mode::Bar(bar) if self.trial.is_empty() => bar.println(message),
            Mode::Bar(bar) => bar.set_message(format!("{} | {message}", self.trial)),
            Mode::Lines => crate::errln!("{message}"),
        }
    }

    fn block_done(&mut self, b: &BlockDone<'_>) -> anyhow::Result<()> {
        if let Mode::Lines = self.mode {
            crate::errln!("{}", block_line(b));
        }
        Ok(())
    }
}
